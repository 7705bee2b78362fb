// gpunode-gen-snapshot: writes a synthetic `kubectl get nodes,pods -A -o json` List of N nodes and
// M pods, shaped and sized like real objects (kubectl's 4-space indentation and sorted keys;
// pods of 3-8 KB with labels, annotations, ownerReferences, a trimmed managedFields, containers
// with env, probes, resources and mounts, tolerations, volumes and status conditions).
//
// 60% of the nodes carry 8 GPUs; GPU pods request 1, 2, 4 or 8 of them. Every node runs the usual
// DaemonSet pods; the rest are CPU workloads. A sprinkling of terminating pods, unhealthy GPUs
// and finished jobs gives audit something to find. Half the GPU pods belong to batch/v1 Jobs,
// written after the pods (some without a TTL, a deadline or a disruption rule), each with the
// kubelet's image pull event. The output is deterministic for a seed.
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "fmt/format.h"

namespace {

struct Out {
  std::FILE* f;
  std::string buf;
  void Flush() {
    std::fwrite(buf.data(), 1, buf.size(), f);
    buf.clear();
  }
};

std::string Uid(std::mt19937_64& rng) {
  uint64_t a = rng(), b = rng();
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                     0x8000 | (b >> 48 & 0x3fff), b & 0xffffffffffffULL);
}

std::string Suffix(std::mt19937_64& rng, int n) {
  static constexpr char kChars[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(kChars[rng() % (sizeof kChars - 1)]);
  return s;
}

struct NodeSpec {
  std::string name;
  bool gpu = false;
  int gpus = 0;
  int allocatable = 0;
  int used = 0;
};

void WriteNode(Out& out, const NodeSpec& n, std::mt19937_64& rng, int index) {
  std::string labels = fmt::format(
      R"("beta.kubernetes.io/arch": "amd64",
                    "beta.kubernetes.io/instance-type": "{0}",
                    "beta.kubernetes.io/os": "linux",
                    "eks.amazonaws.com/capacityType": "ON_DEMAND",
                    "eks.amazonaws.com/nodegroup": "{1}",
                    "failure-domain.beta.kubernetes.io/region": "us-east-1",
                    "failure-domain.beta.kubernetes.io/zone": "us-east-1{2}",
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/hostname": "{3}",
                    "kubernetes.io/os": "linux",
                    "node.kubernetes.io/instance-type": "{0}",
                    "topology.kubernetes.io/region": "us-east-1",
                    "topology.kubernetes.io/zone": "us-east-1{2}")",
      n.gpu ? "p4d.24xlarge" : "m6i.8xlarge", n.gpu ? "gpu-a100" : "general", "abc"[index % 3],
      n.name);
  if (n.gpu) {
    labels += fmt::format(R"(,
                    "nvidia.com/cuda.driver.major": "550",
                    "nvidia.com/cuda.driver.minor": "54",
                    "nvidia.com/cuda.driver.rev": "15",
                    "nvidia.com/cuda.runtime.major": "12",
                    "nvidia.com/cuda.runtime.minor": "4",
                    "nvidia.com/gfd.timestamp": "1714986000",
                    "nvidia.com/gpu.compute.major": "8",
                    "nvidia.com/gpu.compute.minor": "0",
                    "nvidia.com/gpu.count": "{}",
                    "nvidia.com/gpu.family": "ampere",
                    "nvidia.com/gpu.machine": "p4d.24xlarge",
                    "nvidia.com/gpu.memory": "81920",
                    "nvidia.com/gpu.present": "true",
                    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                    "nvidia.com/gpu.replicas": "1",
                    "nvidia.com/mig.capable": "true",
                    "nvidia.com/mig.strategy": "none")",
                          n.gpus);
  }
  std::string taints = n.gpu ? R"(
                "taints": [
                    {
                        "effect": "NoSchedule",
                        "key": "nvidia.com/gpu",
                        "value": "present"
                    }
                ],)"
                             : "";
  std::string gpu_cap = n.gpu ? fmt::format(R"(
                    "nvidia.com/gpu": "{}",)",
                                            n.gpus)
                              : "";
  std::string gpu_alloc = n.gpu ? fmt::format(R"(
                    "nvidia.com/gpu": "{}",)",
                                              n.allocatable)
                                : "";
  std::string images;
  static const char* kImages[] = {
      "nvcr.io/nvidia/pytorch:24.03-py3",
      "nvcr.io/nvidia/k8s-device-plugin:v0.15.0",
      "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04",
      "registry.k8s.io/kube-proxy:v1.29.3",
      "quay.io/prometheus/node-exporter:v1.7.0",
      "602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.16.0",
      "docker.io/library/nginx:1.25",
      "ghcr.io/example/api-server:2024.05.01",
      "fluent/fluent-bit:2.2",
      "registry.k8s.io/pause:3.9"};
  for (size_t i = 0; i < std::size(kImages); ++i) {
    images += fmt::format(R"({}
                    {{
                        "names": [
                            "{}@sha256:{:016x}{:016x}{:016x}{:016x}",
                            "{}"
                        ],
                        "sizeBytes": {}
                    }})",
                          i ? "," : "", kImages[i], rng(), rng(), rng(), rng(), kImages[i],
                          100000000 + rng() % 9000000000);
  }
  const char* ready_status = index % 997 == 13 ? "Unknown" : "True";
  out.buf += fmt::format(
      R"({}
        {{
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {{
                "annotations": {{
                    "alpha.kubernetes.io/provided-node-ip": "10.{}.{}.{}",
                    "node.alpha.kubernetes.io/ttl": "0",
                    "volumes.kubernetes.io/controller-managed-attach-detach": "true"
                }},
                "creationTimestamp": "2024-04-01T12:00:00Z",
                "labels": {{
                    {}
                }},
                "name": "{}",
                "resourceVersion": "{}",
                "uid": "{}"
            }},
            "spec": {{
                "providerID": "aws:///us-east-1a/i-0{:016x}",{}
                "podCIDR": "10.244.{}.0/24"
            }},
            "status": {{
                "addresses": [
                    {{
                        "address": "10.{}.{}.{}",
                        "type": "InternalIP"
                    }},
                    {{
                        "address": "{}",
                        "type": "Hostname"
                    }}
                ],
                "allocatable": {{
                    "cpu": "31850m",
                    "ephemeral-storage": "95551679124",
                    "hugepages-1Gi": "0",
                    "hugepages-2Mi": "0",
                    "memory": "127134876Ki",{}
                    "pods": "110"
                }},
                "capacity": {{
                    "cpu": "32",
                    "ephemeral-storage": "104845292Ki",
                    "hugepages-1Gi": "0",
                    "hugepages-2Mi": "0",
                    "memory": "130379932Ki",{}
                    "pods": "110"
                }},
                "conditions": [
                    {{
                        "lastHeartbeatTime": "2024-05-06T10:00:00Z",
                        "lastTransitionTime": "2024-04-01T12:00:30Z",
                        "message": "kubelet has sufficient memory available",
                        "reason": "KubeletHasSufficientMemory",
                        "status": "False",
                        "type": "MemoryPressure"
                    }},
                    {{
                        "lastHeartbeatTime": "2024-05-06T10:00:00Z",
                        "lastTransitionTime": "2024-04-01T12:00:30Z",
                        "message": "kubelet has no disk pressure",
                        "reason": "KubeletHasNoDiskPressure",
                        "status": "False",
                        "type": "DiskPressure"
                    }},
                    {{
                        "lastHeartbeatTime": "2024-05-06T10:00:00Z",
                        "lastTransitionTime": "2024-04-01T12:00:30Z",
                        "message": "kubelet has sufficient PID available",
                        "reason": "KubeletHasSufficientPID",
                        "status": "False",
                        "type": "PIDPressure"
                    }},
                    {{
                        "lastHeartbeatTime": "2024-05-06T10:00:00Z",
                        "lastTransitionTime": "2024-04-01T12:01:00Z",
                        "message": "kubelet is posting ready status",
                        "reason": "KubeletReady",
                        "status": "{}",
                        "type": "Ready"
                    }}
                ],
                "daemonEndpoints": {{
                    "kubeletEndpoint": {{
                        "Port": 10250
                    }}
                }},
                "images": [{}
                ],
                "nodeInfo": {{
                    "architecture": "amd64",
                    "bootID": "{}",
                    "containerRuntimeVersion": "containerd://1.7.11",
                    "kernelVersion": "5.10.214-202.855.amzn2.x86_64",
                    "kubeProxyVersion": "v1.29.3-eks-adc7111",
                    "kubeletVersion": "v1.29.3-eks-adc7111",
                    "machineID": "ec2{:029x}",
                    "operatingSystem": "linux",
                    "osImage": "Amazon Linux 2",
                    "systemUUID": "ec2{:029x}"
                }}
            }}
        }})",
      index ? "," : "", index / 65536 % 256, index / 256 % 256, index % 256, labels, n.name,
      40000000 + index, Uid(rng), rng(), taints, index % 256, index / 65536 % 256,
      index / 256 % 256, index % 256, n.name, gpu_alloc, gpu_cap, ready_status, images, Uid(rng),
      rng() & 0xffffffffffffffffULL, rng() & 0xffffffffffffffffULL);
}

struct PodSpec {
  std::string ns, name, app, owner_kind, owner_name, node, image, phase = "Running";
  int gpus = 0;
  bool terminating = false;
  bool gpu_toleration = false;
  int env_vars = 2;
};

struct JobSpec {
  std::string ns, name, node, pod;
  int gpus = 0;
  bool hygienic = true;  // deadline, TTL and the DisruptionTarget rule
};

void WriteJob(Out& out, const JobSpec& j, std::mt19937_64& rng) {
  std::string hygiene = j.hygienic ? R"(
                "activeDeadlineSeconds": 86400,
                "podFailurePolicy": {
                    "rules": [
                        {
                            "action": "Ignore",
                            "onPodConditions": [
                                {
                                    "status": "True",
                                    "type": "DisruptionTarget"
                                }
                            ]
                        }
                    ]
                },
                "ttlSecondsAfterFinished": 3600,)"
                                   : "";
  out.buf += fmt::format(R"(,
        {{
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {{
                "creationTimestamp": "2024-05-06T08:00:00Z",
                "generation": 1,
                "labels": {{
                    "app": "{1}",
                    "team": "{0}"
                }},
                "name": "{1}",
                "namespace": "{0}",
                "resourceVersion": "{2}",
                "uid": "{3}"
            }},
            "spec": {{{4}
                "backoffLimit": 6,
                "completionMode": "NonIndexed",
                "completions": 1,
                "manualSelector": false,
                "parallelism": 1,
                "podReplacementPolicy": "TerminatingOrFailed",
                "selector": {{
                    "matchLabels": {{
                        "batch.kubernetes.io/controller-uid": "{3}"
                    }}
                }},
                "suspend": false,
                "template": {{
                    "metadata": {{
                        "creationTimestamp": null,
                        "labels": {{
                            "app": "{1}",
                            "batch.kubernetes.io/job-name": "{1}"
                        }}
                    }},
                    "spec": {{
                        "containers": [
                            {{
                                "command": [
                                    "torchrun",
                                    "--nproc-per-node={5}",
                                    "train.py"
                                ],
                                "image": "nvcr.io/nvidia/pytorch:24.03-py3",
                                "imagePullPolicy": "IfNotPresent",
                                "name": "main",
                                "resources": {{
                                    "limits": {{
                                        "cpu": "16",
                                        "memory": "128Gi",
                                        "nvidia.com/gpu": "{5}"
                                    }},
                                    "requests": {{
                                        "cpu": "16",
                                        "memory": "128Gi",
                                        "nvidia.com/gpu": "{5}"
                                    }}
                                }},
                                "terminationMessagePath": "/dev/termination-log",
                                "terminationMessagePolicy": "File"
                            }}
                        ],
                        "dnsPolicy": "ClusterFirst",
                        "restartPolicy": "Never",
                        "schedulerName": "default-scheduler",
                        "terminationGracePeriodSeconds": 30
                    }}
                }}
            }},
            "status": {{
                "active": 1,
                "ready": 1,
                "startTime": "2024-05-06T08:00:00Z",
                "terminating": 0,
                "uncountedTerminatedPods": {{}}
            }}
        }},
        {{
            "apiVersion": "v1",
            "count": 1,
            "eventTime": null,
            "firstTimestamp": "2024-05-06T08:0{6}:00Z",
            "involvedObject": {{
                "apiVersion": "v1",
                "fieldPath": "spec.containers{{main}}",
                "kind": "Pod",
                "name": "{7}",
                "namespace": "{0}",
                "resourceVersion": "{2}",
                "uid": "{8}"
            }},
            "kind": "Event",
            "lastTimestamp": "2024-05-06T08:0{6}:00Z",
            "message": "Successfully pulled image \"nvcr.io/nvidia/pytorch:24.03-py3\" in {6}m{9}.{10}s ({6}m{9}.{10}s including waiting). Image size: 9876543210 bytes.",
            "metadata": {{
                "creationTimestamp": "2024-05-06T08:0{6}:00Z",
                "name": "{7}.{11:016x}",
                "namespace": "{0}",
                "resourceVersion": "{2}",
                "uid": "{12}"
            }},
            "reason": "Pulled",
            "reportingComponent": "kubelet",
            "reportingInstance": "{13}",
            "source": {{
                "component": "kubelet",
                "host": "{13}"
            }},
            "type": "Normal"
        }})",
                         j.ns, j.name, 50000000 + rng() % 1000000, Uid(rng), hygiene, j.gpus,
                         1 + rng() % 4, j.pod, Uid(rng), rng() % 60, rng() % 10,
                         rng() & 0xffffffffffffffffULL, Uid(rng), j.node);
}

void WritePod(Out& out, const PodSpec& p, std::mt19937_64& rng, int index) {
  std::string gpu_req = p.gpus ? fmt::format(R"(,
                                "nvidia.com/gpu": "{}")",
                                             p.gpus)
                               : "";
  std::string deletion = p.terminating ? R"(
                "deletionGracePeriodSeconds": 30,
                "deletionTimestamp": "2024-05-06T09:30:00Z",)"
                                       : "";
  std::string gpu_tol = p.gpu_toleration ? R"(
                    {
                        "effect": "NoSchedule",
                        "key": "nvidia.com/gpu",
                        "operator": "Exists"
                    },)"
                                         : "";
  std::string node = p.node.empty() ? ""
                                    : fmt::format(R"(
                "nodeName": "{}",)",
                                                  p.node);
  std::string env;
  for (int i = 0; i < p.env_vars; ++i) {
    env += fmt::format(R"({}
                            {{
                                "name": "{}_{}",
                                "value": "{}"
                            }})",
                       i ? "," : "", i % 2 ? "FEATURE_FLAG" : "SERVICE_ENDPOINT", i,
                       i % 2 ? "enabled" : "http://backend.default.svc.cluster.local:8080");
  }
  std::string status;
  if (p.phase == "Pending" && p.node.empty()) {
    status = R"(
                "conditions": [
                    {
                        "lastProbeTime": null,
                        "lastTransitionTime": "2024-05-06T09:40:00Z",
                        "message": "0/5000 nodes are available: 5000 Insufficient nvidia.com/gpu. preemption: 0/5000 nodes are available: 5000 No preemption victims found for incoming pod.",
                        "reason": "Unschedulable",
                        "status": "False",
                        "type": "PodScheduled"
                    }
                ],
                "phase": "Pending",
                "qosClass": "Burstable")";
  } else {
    status = fmt::format(R"(
                "conditions": [
                    {{
                        "lastProbeTime": null,
                        "lastTransitionTime": "2024-05-06T08:00:00Z",
                        "status": "True",
                        "type": "Initialized"
                    }},
                    {{
                        "lastProbeTime": null,
                        "lastTransitionTime": "2024-05-06T08:01:10Z",
                        "status": "True",
                        "type": "Ready"
                    }},
                    {{
                        "lastProbeTime": null,
                        "lastTransitionTime": "2024-05-06T08:01:10Z",
                        "status": "True",
                        "type": "ContainersReady"
                    }},
                    {{
                        "lastProbeTime": null,
                        "lastTransitionTime": "2024-05-06T08:00:00Z",
                        "status": "True",
                        "type": "PodScheduled"
                    }}
                ],
                "containerStatuses": [
                    {{
                        "containerID": "containerd://{:016x}{:016x}{:016x}{:016x}",
                        "image": "{}",
                        "imageID": "{}@sha256:{:016x}{:016x}{:016x}{:016x}",
                        "lastState": {{}},
                        "name": "main",
                        "ready": true,
                        "restartCount": 0,
                        "started": true,
                        "state": {{
                            "running": {{
                                "startedAt": "2024-05-06T08:01:02Z"
                            }}
                        }}
                    }}
                ],
                "hostIP": "10.0.{}.{}",
                "hostIPs": [
                    {{
                        "ip": "10.0.{}.{}"
                    }}
                ],
                "phase": "{}",
                "podIP": "10.244.{}.{}",
                "podIPs": [
                    {{
                        "ip": "10.244.{}.{}"
                    }}
                ],
                "qosClass": "Burstable",
                "startTime": "2024-05-06T08:00:00Z")",
                         rng(), rng(), rng(), rng(), p.image, p.image, rng(), rng(), rng(), rng(),
                         index / 256 % 256, index % 256, index / 256 % 256, index % 256, p.phase,
                         index / 256 % 256, index % 256, index / 256 % 256, index % 256);
  }
  std::string uid = Uid(rng);
  out.buf += fmt::format(
      R"(,
        {{
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {{
                "annotations": {{
                    "kubectl.kubernetes.io/restartedAt": "2024-05-01T10:12:44Z",
                    "prometheus.io/port": "9102",
                    "prometheus.io/scrape": "true"
                }},
                "creationTimestamp": "2024-05-06T08:00:00Z",{}
                "generateName": "{}-",
                "labels": {{
                    "app.kubernetes.io/component": "worker",
                    "app.kubernetes.io/instance": "{}",
                    "app.kubernetes.io/managed-by": "Helm",
                    "app.kubernetes.io/name": "{}",
                    "pod-template-hash": "{}",
                    "team": "{}"
                }},
                "managedFields": [
                    {{
                        "apiVersion": "v1",
                        "fieldsType": "FieldsV1",
                        "fieldsV1": {{
                            "f:metadata": {{
                                "f:generateName": {{}},
                                "f:labels": {{
                                    ".": {{}},
                                    "f:app.kubernetes.io/name": {{}}
                                }},
                                "f:ownerReferences": {{
                                    ".": {{}},
                                    "k:{{\"uid\":\"{}\"}}": {{}}
                                }}
                            }}
                        }},
                        "manager": "kube-controller-manager",
                        "operation": "Update",
                        "time": "2024-05-06T08:00:00Z"
                    }}
                ],
                "name": "{}",
                "namespace": "{}",
                "ownerReferences": [
                    {{
                        "apiVersion": "apps/v1",
                        "blockOwnerDeletion": true,
                        "controller": true,
                        "kind": "{}",
                        "name": "{}",
                        "uid": "{}"
                    }}
                ],
                "resourceVersion": "{}",
                "uid": "{}"
            }},
            "spec": {{
                "containers": [
                    {{
                        "env": [{}
                        ],
                        "image": "{}",
                        "imagePullPolicy": "IfNotPresent",
                        "name": "main",
                        "resources": {{
                            "limits": {{
                                "memory": "4Gi"{}
                            }},
                            "requests": {{
                                "cpu": "500m",
                                "memory": "2Gi"{}
                            }}
                        }},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "volumeMounts": [
                            {{
                                "mountPath": "/etc/app",
                                "name": "config",
                                "readOnly": true
                            }},
                            {{
                                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                "name": "kube-api-access-{}",
                                "readOnly": true
                            }}
                        ]
                    }}
                ],
                "dnsPolicy": "ClusterFirst",
                "enableServiceLinks": true,{}
                "preemptionPolicy": "PreemptLowerPriority",
                "priority": 0,
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                "securityContext": {{}},
                "serviceAccount": "{}",
                "serviceAccountName": "{}",
                "terminationGracePeriodSeconds": 30,
                "tolerations": [{}
                    {{
                        "effect": "NoExecute",
                        "key": "node.kubernetes.io/not-ready",
                        "operator": "Exists",
                        "tolerationSeconds": 300
                    }},
                    {{
                        "effect": "NoExecute",
                        "key": "node.kubernetes.io/unreachable",
                        "operator": "Exists",
                        "tolerationSeconds": 300
                    }}
                ],
                "volumes": [
                    {{
                        "configMap": {{
                            "defaultMode": 420,
                            "name": "{}-config"
                        }},
                        "name": "config"
                    }},
                    {{
                        "name": "kube-api-access-{}",
                        "projected": {{
                            "defaultMode": 420,
                            "sources": [
                                {{
                                    "serviceAccountToken": {{
                                        "expirationSeconds": 3607,
                                        "path": "token"
                                    }}
                                }},
                                {{
                                    "configMap": {{
                                        "items": [
                                            {{
                                                "key": "ca.crt",
                                                "path": "ca.crt"
                                            }}
                                        ],
                                        "name": "kube-root-ca.crt"
                                    }}
                                }}
                            ]
                        }}
                    }}
                ]
            }},
            "status": {{{}
            }}
        }})",
      deletion, p.owner_name, p.app, p.app, Suffix(rng, 9), p.ns, uid, p.name, p.ns, p.owner_kind,
      p.owner_name, uid, 40000000 + index, Uid(rng), env, p.image, gpu_req, gpu_req, Suffix(rng, 5),
      node, p.app, p.app, gpu_tol, p.app, Suffix(rng, 5), status);
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 100;
  int pods = 3000;
  uint64_t seed = 1;
  std::string output = "-";
  CLI::App app{"Writes a synthetic `kubectl get nodes,pods -A -o json` snapshot",
               "gpunode-gen-snapshot"};
  app.add_option("--nodes", nodes, "number of nodes")->check(CLI::PositiveNumber);
  app.add_option("--pods", pods, "number of pods")->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed, "random seed");
  app.add_option("-o,--output", output, "file to write (- for stdout)");
  CLI11_PARSE(app, argc, argv);

  Out out{output == "-" ? stdout : std::fopen(output.c_str(), "wb"), {}};
  if (out.f == nullptr) {
    std::fprintf(stderr, "gpunode-gen-snapshot: cannot write %s\n", output.c_str());
    return 2;
  }
  std::mt19937_64 rng(seed);
  std::vector<NodeSpec> node_specs(nodes);
  out.buf += "{\n    \"apiVersion\": \"v1\",\n    \"items\": [";
  for (int i = 0; i < nodes; ++i) {
    NodeSpec& n = node_specs[i];
    n.gpu = i % 5 < 3;
    n.name = fmt::format("ip-10-{}-{}-{}.ec2.internal", i / 65536 % 256, i / 256 % 256, i % 256);
    if (n.gpu) {
      n.gpus = 8;
      n.allocatable = i % 401 == 7 ? 7 : 8;  // now and then an unhealthy GPU
    }
    WriteNode(out, n, rng, i);
    if (out.buf.size() > (1 << 20)) out.Flush();
  }
  static const char* kDaemonSets[] = {"kube-proxy", "aws-node", "node-exporter",
                                      "nvidia-device-plugin-daemonset", "dcgm-exporter"};
  static const char* kTeams[] = {"research", "serving", "platform", "data", "web"};
  int written = 0;
  std::vector<JobSpec> jobs;
  for (int i = 0; written < pods; ++i) {
    PodSpec p;
    int slot = i % 31;
    NodeSpec& n = node_specs[(i / 31) % nodes];
    if (slot < 5 && (slot < 3 || n.gpu)) {
      p.ns = slot == 2 ? "monitoring" : "kube-system";
      p.app = kDaemonSets[slot];
      p.owner_kind = "DaemonSet";
      p.owner_name = p.app;
      p.node = n.name;
      p.image = "registry.k8s.io/kube-proxy:v1.29.3";
      p.gpu_toleration = true;
      p.env_vars = 0;
    } else if (n.gpu && n.used < n.allocatable && slot < 14) {
      static const int kSizes[] = {1, 2, 4, 8, 1, 2};
      p.gpus = std::min(kSizes[rng() % std::size(kSizes)], n.allocatable - n.used);
      n.used += p.gpus;
      p.ns = "ml-" + std::string(kTeams[i % 3]);
      p.app = fmt::format("train-{}", i % 97);
      p.node = n.name;
      if (i % 2 == 0) {
        p.owner_kind = "Job";
        p.owner_name = fmt::format("{}-{}", p.app, i);
      } else {
        p.owner_kind = "ReplicaSet";
        p.owner_name = fmt::format("{}-{}", p.app, Suffix(rng, 9));
      }
      p.image = "nvcr.io/nvidia/pytorch:24.03-py3";
      p.gpu_toleration = true;
      p.env_vars = 6;
      p.terminating = i % 5003 == 17;
    } else {
      p.ns = kTeams[i % std::size(kTeams)];
      p.app = fmt::format("svc-{}", i % 211);
      p.owner_kind = "ReplicaSet";
      p.owner_name = fmt::format("{}-{}", p.app, Suffix(rng, 9));
      // CPU work goes to CPU nodes; pods left over when the GPU slots are full find one.
      p.node = n.gpu ? node_specs[((i / 31) % nodes / 5 * 5 + 3) % nodes].name : n.name;
      p.image = "ghcr.io/example/api-server:2024.05.01";
      if (i % 211 == 5) p.phase = "Succeeded";
    }
    if (i % 10007 == 3) {  // a Pending GPU pod no node can take
      p.node.clear();
      p.phase = "Pending";
      p.gpus = 16;
      p.gpu_toleration = true;
    }
    p.name = fmt::format("{}-{}", p.owner_name, Suffix(rng, 5));
    if (p.owner_kind == "Job") {
      jobs.push_back({p.ns, p.owner_name, p.node, p.name, p.gpus, i % 7 != 0});
    }
    WritePod(out, p, rng, written);
    ++written;
    if (out.buf.size() > (1 << 20)) out.Flush();
  }
  for (const JobSpec& j : jobs) {
    WriteJob(out, j, rng);
    if (out.buf.size() > (1 << 20)) out.Flush();
  }
  out.buf +=
      "\n    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n "
      "   }\n}\n";
  out.Flush();
  if (out.f != stdout) std::fclose(out.f);
  return 0;
}
