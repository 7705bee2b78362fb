// go_peer plays the kubelet's side of the device plugin API with Go's gRPC, the library the
// real kubelet is built on, so that gpunode's own gRPC transport (src/h2grpc) is checked against
// it on the wire. It dials the plugin as the kubelet's device manager does: the socket path as
// the target, so that Go sends that path as :authority. It serves Registration on DIR/kubelet.sock and, as the kubelet does, dials the plugin
// and asks for its options inside Register; after Register returns it opens ListAndWatch and
// calls Allocate and GetPreferredAllocation. Each outcome is one line on stdout for the test.
//
// Usage: go_peer DIR
// Messages are encoded by hand (protowire): Debian ships no generated Go code for this API.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// rawCodec passes serialized messages through unchanged.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string   { return "proto" }
func (rawCodec) String() string { return "proto" }

// fields decodes one message level: field number -> values, in order (bytes for length-delimited
// fields, the number as decimal text for varints).
func fields(b []byte) (map[protowire.Number][][]byte, error) {
	out := map[protowire.Number][][]byte{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		switch typ {
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			out[num] = append(out[num], v)
			b = b[m:]
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			out[num] = append(out[num], []byte(fmt.Sprint(v)))
			b = b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			b = b[m:]
		}
	}
	return out, nil
}

func str(f map[protowire.Number][][]byte, n protowire.Number) string {
	if v := f[n]; len(v) > 0 {
		return string(v[len(v)-1])
	}
	return ""
}

func appendString(b []byte, n protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMessage(b []byte, n protowire.Number, m []byte) []byte {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

func dial(ctx context.Context, socket string) (*grpc.ClientConn, error) {
	return grpc.DialContext(ctx, socket, grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
}

type kubelet struct {
	dir        string
	registered chan string // the endpoint of each accepted registration
}

func (k *kubelet) register(ctx context.Context, request []byte) error {
	f, err := fields(request)
	if err != nil {
		return status.Errorf(3, "cannot parse RegisterRequest: %v", err)
	}
	options, err := fields(firstOr(f[4]))
	if err != nil {
		return status.Errorf(3, "cannot parse options: %v", err)
	}
	fmt.Printf("register version=%s endpoint=%s resource=%s preferred=%s\n", str(f, 1), str(f, 2),
		str(f, 3), str(options, 2))
	if str(f, 1) != "v1beta1" {
		return status.Errorf(3, "unsupported version %q", str(f, 1))
	}
	// As the kubelet: dial the plugin and ask for its options before answering.
	dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := dial(dialCtx, filepath.Join(k.dir, str(f, 2)))
	if err != nil {
		fmt.Printf("error dialling the plugin: %v\n", err)
		return status.Errorf(14, "cannot dial the plugin: %v", err)
	}
	defer conn.Close()
	in, out := []byte{}, []byte{}
	if err := conn.Invoke(dialCtx, "/v1beta1.DevicePlugin/GetDevicePluginOptions", &in, &out); err != nil {
		fmt.Printf("error in GetDevicePluginOptions: %v\n", err)
		return status.Errorf(14, "GetDevicePluginOptions: %v", err)
	}
	got, _ := fields(out)
	fmt.Printf("options preferred=%s\n", str(got, 2))
	k.registered <- str(f, 2)
	return nil
}

func firstOr(v [][]byte) []byte {
	if len(v) == 0 {
		return nil
	}
	return v[0]
}

func registrationDesc(k *kubelet) *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: "v1beta1.Registration",
		HandlerType: (*interface{})(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Register",
			Handler: func(_ interface{}, ctx context.Context, dec func(interface{}) error,
				_ grpc.UnaryServerInterceptor) (interface{}, error) {
				var request []byte
				if err := dec(&request); err != nil {
					return nil, err
				}
				if err := k.register(ctx, request); err != nil {
					return nil, err
				}
				empty := []byte{}
				return &empty, nil
			},
		}},
	}
}

// use runs what the kubelet does with a registered plugin; an error ends the program.
func use(dir, endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := dial(ctx, filepath.Join(dir, endpoint))
	if err != nil {
		return err
	}
	defer conn.Close()

	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true},
		"/v1beta1.DevicePlugin/ListAndWatch")
	if err != nil {
		return err
	}
	empty := []byte{}
	if err := stream.SendMsg(&empty); err != nil {
		return err
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	var list []byte
	if err := stream.RecvMsg(&list); err != nil {
		return fmt.Errorf("ListAndWatch: %v", err)
	}
	response, err := fields(list)
	if err != nil {
		return err
	}
	var ids []string
	healthy := 0
	for _, raw := range response[1] {
		device, err := fields(raw)
		if err != nil {
			return err
		}
		ids = append(ids, str(device, 1))
		if str(device, 2) == "Healthy" {
			healthy++
		}
	}
	fmt.Printf("list devices=%d healthy=%d\n", len(ids), healthy)
	if len(ids) < 2 {
		return fmt.Errorf("expected at least two devices")
	}

	// Allocate two devices for one container.
	container := appendString(appendString(nil, 1, ids[0]), 1, ids[1])
	request := appendMessage(nil, 1, container)
	var answer []byte
	if err := conn.Invoke(ctx, "/v1beta1.DevicePlugin/Allocate", &request, &answer); err != nil {
		return fmt.Errorf("Allocate: %v", err)
	}
	allocated, err := fields(answer)
	if err != nil {
		return err
	}
	containerResponse, err := fields(firstOr(allocated[1]))
	if err != nil {
		return err
	}
	envs := []string{}
	for _, entry := range containerResponse[1] {
		kv, err := fields(entry)
		if err != nil {
			return err
		}
		envs = append(envs, str(kv, 1)+"="+str(kv, 2))
	}
	sort.Strings(envs)
	fmt.Printf("allocate %s\n", strings.Join(envs, " "))

	// The preferred pair out of every device.
	preferredRequest := []byte{}
	for _, id := range ids {
		preferredRequest = appendString(preferredRequest, 1, id)
	}
	preferredRequest = protowire.AppendTag(preferredRequest, 3, protowire.VarintType)
	preferredRequest = protowire.AppendVarint(preferredRequest, 2)
	preferredRequest = appendMessage(nil, 1, preferredRequest)
	if err := conn.Invoke(ctx, "/v1beta1.DevicePlugin/GetPreferredAllocation", &preferredRequest,
		&answer); err != nil {
		return fmt.Errorf("GetPreferredAllocation: %v", err)
	}
	preferred, err := fields(answer)
	if err != nil {
		return err
	}
	chosen, err := fields(firstOr(preferred[1]))
	if err != nil {
		return err
	}
	names := []string{}
	for _, id := range chosen[1] {
		names = append(names, string(id))
	}
	fmt.Printf("preferred %s\n", strings.Join(names, ","))

	// An unknown device is an error with its code and message, and the connection stays usable.
	bad := appendMessage(nil, 1, appendString(nil, 1, "GPU-does-not-exist"))
	err = conn.Invoke(ctx, "/v1beta1.DevicePlugin/Allocate", &bad, &answer)
	st, _ := status.FromError(err)
	fmt.Printf("unknown code=%d message=%s\n", st.Code(), st.Message())

	// A large request, beyond HTTP/2's 16 KiB frames and the initial 64 KiB window: one device,
	// and 1 MiB in a field the plugin does not know, which protobuf skips.
	padded := appendString(nil, 1, ids[0])
	padded = appendMessage(padded, 99, make([]byte, 1<<20))
	padded = appendMessage(nil, 1, padded)
	if err := conn.Invoke(ctx, "/v1beta1.DevicePlugin/Allocate", &padded, &answer); err != nil {
		return fmt.Errorf("large Allocate: %v", err)
	}
	allocated, err = fields(answer)
	if err != nil {
		return err
	}
	fmt.Printf("large bytes=%d containers=%d\n", len(padded), len(allocated[1]))

	// The stream stays open until the plugin stops: then it ends, with the plugin's status.
	fmt.Println("watching")
	for {
		if err := stream.RecvMsg(&list); err == io.EOF {
			fmt.Println("stream ended code=0") // the call's status was OK
			return nil
		} else if err != nil {
			st, _ := status.FromError(err)
			fmt.Printf("stream ended code=%d message=%s\n", st.Code(), st.Message())
			return nil
		}
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go_peer DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	socket := filepath.Join(dir, "kubelet.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	k := &kubelet{dir: dir, registered: make(chan string, 1)}
	server := grpc.NewServer(grpc.CustomCodec(rawCodec{}))
	server.RegisterService(registrationDesc(k), nil)
	go server.Serve(listener)
	fmt.Println("listening")
	endpoint := <-k.registered
	if err := use(dir, endpoint); err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	server.Stop()
}
