# A CDI spec as a set of facts, one a line (jq -r --arg root DRIVER_ROOT -f cdi_facts.jq SPEC):
# each device's name and device nodes; the common edits' and each device's env, device nodes,
# mounts with their options, and hooks, one fact per link or folder; the driver root written
# <root>. A GPU's own entries are "device-in-mig-mode" when every node they name is also a MIG
# device's (the GPU is in MIG mode). tests/side_by_side/cdi_generate_test.sh compares
# nvidia-ctk's and gpunode's specs by these, device_plugin_test.cc the device plugins'.
def rel: if type == "string" and startswith($root) then "<root>" + .[($root | length):] else . end;
def pairs:
  if length == 0 then empty
  elif (.[0] | startswith("--")) and (.[0] | contains("=") | not) and length > 1
       and (.[1] | startswith("--") | not)
  then "\(.[0]) \(.[1] | rel)", (.[2:] | pairs)
  else (.[0] | rel), (.[1:] | pairs) end;
def edits($at):
  (.env[]? | "\($at)env \(.)"),
  (.deviceNodes[]? | "\($at)node \(.path) \((.hostPath // .path) | rel)"),
  (.mounts[]? | "\($at)mount \(.containerPath) \(.hostPath | rel) \(.options // [] | join(","))"),
  (.hooks[]? | . as $hook
    | (.args[1:] | if .[0] == "hook" then .[1:] else . end) as $args
    | "\($at)hook \($hook.hookName) \($hook.path | rel) \($hook.args[0]) \($args[0])" as $head
    | ([$args[1:] | pairs] | if length == 0 then $head else .[] | "\($head) \(.)" end),
      ($hook.env[]? | "\($at)hook-env \($hook.hookName) \($args[0]) \(.)"));
[.devices[] | select(.name | test(":")) | .containerEdits.deviceNodes[]?.path] as $mig_nodes
| "cdiVersion \(.cdiVersion)", "kind \(.kind)",
  (.containerEdits | edits("")),
  (.devices[] | .name as $name
    | (if ($name | test("^([0-9]+|GPU-.*)$"))
          and ([.containerEdits.deviceNodes[]?.path] - $mig_nodes | length) == 0
       then "device-in-mig-mode" else "device" end) as $kind
    | "\($kind) \($name)", (.containerEdits | edits("\($kind) \($name) ")))
