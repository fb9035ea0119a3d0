package remote

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// HubOptions configure an embedded NATS server with JetStream.
type HubOptions struct {
	Listen string // host:port; port 0 or -1 = a free one
	Store  string // JetStream's store directory (required)
	Token  string // clients must present it, when set
}

// Hub is an embedded NATS server with JetStream.
type Hub struct{ srv *server.Server }

// StartHub starts an embedded server and waits until it takes clients. A
// hub restarted on the same store has every stream, bucket and message.
func StartHub(o HubOptions) (*Hub, error) {
	if o.Store == "" {
		return nil, fmt.Errorf("remote: the hub needs a store directory")
	}
	host, port := "127.0.0.1", -1
	if o.Listen != "" {
		h, p, err := net.SplitHostPort(o.Listen)
		if err != nil {
			return nil, fmt.Errorf("remote: --listen %q: %w", o.Listen, err)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("remote: --listen %q: bad port", o.Listen)
		}
		host, port = h, n
		if port == 0 {
			port = -1
		}
	}
	srv, err := server.NewServer(&server.Options{Host: host, Port: port, JetStream: true, StoreDir: o.Store, NoSigs: true,
		Authorization: o.Token, MaxPayload: MaxMessage})
	if err != nil {
		return nil, fmt.Errorf("remote: hub: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("remote: hub did not start listening on %s", o.Listen)
	}
	return &Hub{srv: srv}, nil
}

// URL is the hub's client URL.
func (h *Hub) URL() string { return h.srv.ClientURL() }

// Close shuts the server down and waits for it.
func (h *Hub) Close() {
	h.srv.Shutdown()
	h.srv.WaitForShutdown()
}
