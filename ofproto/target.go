package ofproto

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/govs-project/govs/internal/unixsock"
	"go.uber.org/zap"
)

// Target is an OVS-style connection target: passive "punix:PATH",
// "ptcp:PORT[:IP]", or active "unix:PATH", "tcp:IP[:PORT]".
type Target struct {
	Passive bool
	Network string // "unix" or "tcp"
	Address string
}

func (t Target) String() string {
	p := ""
	if t.Passive {
		p = "p"
	}
	if t.Network == "tcp" && t.Passive {
		host, port, _ := net.SplitHostPort(t.Address)
		if host == "" {
			return p + "tcp:" + port
		}
		return p + "tcp:" + port + ":" + host
	}
	return p + t.Network + ":" + t.Address
}

// DefaultOpenFlowPort is the IANA OpenFlow port.
const DefaultOpenFlowPort = 6653

// ParseTarget parses a connection target in ovs-vsctl syntax.
func ParseTarget(s string) (Target, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Target{}, fmt.Errorf("%q: a target is punix:PATH, ptcp:PORT[:IP], unix:PATH or tcp:IP[:PORT]", s)
	}
	switch kind {
	case "punix", "unix":
		if rest == "" {
			return Target{}, fmt.Errorf("%q: missing socket path", s)
		}
		return Target{Passive: kind == "punix", Network: "unix", Address: rest}, nil
	case "ptcp":
		port, ip, _ := strings.Cut(rest, ":")
		if port == "" {
			port = strconv.Itoa(DefaultOpenFlowPort)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return Target{}, fmt.Errorf("%q: bad port %q", s, port)
		}
		return Target{Passive: true, Network: "tcp", Address: net.JoinHostPort(ip, port)}, nil
	case "tcp":
		host, port := rest, strconv.Itoa(DefaultOpenFlowPort)
		if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.Contains(rest[i+1:], "]") {
			host, port = rest[:i], rest[i+1:]
		}
		host = strings.Trim(host, "[]")
		if host == "" {
			return Target{}, fmt.Errorf("%q: missing host", s)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return Target{}, fmt.Errorf("%q: bad port %q", s, port)
		}
		return Target{Network: "tcp", Address: net.JoinHostPort(host, port)}, nil
	}
	return Target{}, fmt.Errorf("%q: unknown target type %q (punix, ptcp, unix, tcp)", s, kind)
}

// HandlerFactory makes a handler for each new connection.
type HandlerFactory func() Handler

// Listener accepts OpenFlow connections on a passive target.
type Listener struct {
	Target Target
	ln     net.Listener
	wg     sync.WaitGroup
}

// Listen opens a passive target. For unix sockets a stale socket file is
// replaced, as ovs-vswitchd does (any other file there is an error), and
// the file appears only once the socket listens (unixsock.Listen): a
// client that waits for br-int.mgmt and connects at once is not refused.
func Listen(t Target) (*Listener, error) {
	if !t.Passive {
		return nil, fmt.Errorf("%s is not a passive target", t)
	}
	var ln net.Listener
	var err error
	if t.Network == "unix" {
		if fi, serr := os.Stat(t.Address); serr == nil && fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("listening on %s: %s exists and is not a socket", t, t.Address)
		}
		ln, err = unixsock.Listen(t.Address)
	} else {
		ln, err = net.Listen(t.Network, t.Address)
	}
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", t, err)
	}
	return &Listener{Target: t, ln: ln}, nil
}

// Addr returns the listening address (useful with ptcp:0).
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Serve accepts connections until ctx ends, serving each in a goroutine.
func (l *Listener) Serve(ctx context.Context, mk HandlerFactory, opts ConnOptions) error {
	go func() {
		<-ctx.Done()
		l.ln.Close()
	}()
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	defer l.wg.Wait()
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accepting on %s: %w", l.Target, err)
		}
		sopts := opts
		sopts.Service = true
		c := NewConn(nc, mk(), sopts)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			if err := c.Serve(ctx); err != nil {
				log.Debug("connection ended", zap.String("listener", l.Target.String()), zap.Error(err))
			}
		}()
	}
}

// Close stops accepting (for unix sockets, removes the socket file).
func (l *Listener) Close() error {
	err := l.ln.Close()
	if l.Target.Network == "unix" {
		os.Remove(l.Target.Address)
	}
	return err
}

// Controller keeps an active connection to a controller, reconnecting with
// exponential backoff (1 s doubling to MaxBackoff, as OVS's rconn).
type Controller struct {
	Target     Target
	MaxBackoff time.Duration
}

// Run connects and serves until ctx ends.
func (ctl *Controller) Run(ctx context.Context, mk HandlerFactory, opts ConnOptions) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	maxB := ctl.MaxBackoff
	if maxB == 0 {
		maxB = 8 * time.Second
	}
	backoff := time.Second
	for ctx.Err() == nil {
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		nc, err := d.DialContext(dctx, ctl.Target.Network, ctl.Target.Address)
		cancel()
		if err == nil {
			start := time.Now()
			c := NewConn(nc, mk(), opts)
			err = c.Serve(ctx)
			if time.Since(start) > maxB {
				backoff = time.Second
			}
		}
		if ctx.Err() != nil {
			return
		}
		log.Info("controller connection down, retrying", zap.String("target", ctl.Target.String()),
			zap.Duration("backoff", backoff), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff *= 2
		if backoff > maxB {
			backoff = maxB
		}
	}
}
