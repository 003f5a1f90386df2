package vswitchd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/govs-project/govs/internal/unixsock"
	"go.uber.org/zap"
)

// CtlSocketName is the control socket's file name in the rundir.
const CtlSocketName = "govs-vswitchd.ctl"

// Request is one control command: the words a user typed after `govs`.
type Request struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// Reply is the daemon's answer.
type Reply struct {
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Commands lists the control commands and their ovs-vsctl-style usage.
var Commands = map[string]string{
	"add-br":          "add-br BRIDGE [datapath_id=HEX] [fail_mode=secure|standalone] [listener=ptcp:PORT] [controller=tcp:IP:PORT]",
	"del-br":          "del-br BRIDGE",
	"add-port":        "add-port BRIDGE PORT [type=system|internal|geneve] [ofport_request=N] [mac=MAC] [mtu_request=N] [options:KEY=VALUE...] (geneve: options:remote_ip=flow|IP options:local_ip=IP|flow [options:key=flow|0] [options:csum=true|false] [options:dst_port=N] [options:ttl=N]; system and internal: options:vnet_hdr=true|false; system and afxdp: options:n_rxq_desc=N)",
	"del-port":        "del-port [BRIDGE] PORT",
	"show":            "show",
	"dump-cache":      "dump-cache [BRIDGE]: the megaflow cache counters of each bridge",
	"dump-conntrack":  "dump-conntrack [-m] [-s] [zone=N]: the connections, like ovs-appctl dpctl/dump-conntrack",
	"flush-conntrack": "flush-conntrack [zone=N]",
}

// Execute runs one control command.
func (d *Daemon) Execute(req Request) Reply {
	out, err := d.execute(req)
	if err != nil {
		return Reply{Error: err.Error()}
	}
	return Reply{Output: out}
}

func (d *Daemon) execute(req Request) (string, error) {
	a := req.Args
	switch req.Command {
	case "add-br":
		if len(a) < 1 {
			return "", fmt.Errorf("usage: %s", Commands["add-br"])
		}
		cfg := BridgeConfig{Name: a[0]}
		for _, w := range a[1:] {
			k, v, ok := strings.Cut(w, "=")
			if !ok {
				return "", fmt.Errorf("%q: expected KEY=VALUE", w)
			}
			v = strings.Trim(v, `"`)
			switch k {
			case "datapath_id", "other_config:datapath-id":
				cfg.DatapathID = v
			case "fail_mode":
				cfg.FailMode = v
			case "listener":
				cfg.Listeners = append(cfg.Listeners, v)
			case "controller":
				cfg.Controllers = append(cfg.Controllers, v)
			default:
				return "", fmt.Errorf("%q: unknown bridge column (datapath_id, fail_mode, listener, controller)", k)
			}
		}
		return "", d.AddBridge(cfg)
	case "del-br":
		if len(a) != 1 {
			return "", fmt.Errorf("usage: %s", Commands["del-br"])
		}
		return "", d.DelBridge(a[0])
	case "add-port":
		if len(a) < 2 {
			return "", fmt.Errorf("usage: %s", Commands["add-port"])
		}
		p, err := ParsePortWords(a[1], a[2:])
		if err != nil {
			return "", err
		}
		return "", d.AddPort(a[0], p)
	case "del-port":
		switch len(a) {
		case 1:
			return "", d.DelPort("", a[0])
		case 2:
			return "", d.DelPort(a[0], a[1])
		}
		return "", fmt.Errorf("usage: %s", Commands["del-port"])
	case "show":
		return d.Show(), nil
	case "dump-cache":
		return d.DumpCache(a)
	case "dump-conntrack":
		return d.DumpConntrack(a)
	case "flush-conntrack":
		return d.FlushConntrack(a)
	}
	return "", fmt.Errorf("unknown command %q", req.Command)
}

// ServeCtl answers control requests on <rundir>/govs-vswitchd.ctl until
// ctx ends: one JSON request and one JSON reply per line.
func (d *Daemon) ServeCtl(ctx context.Context) error {
	ln, err := unixsock.Listen(filepath.Join(d.Rundir, CtlSocketName))
	if err != nil {
		return fmt.Errorf("control socket: %w", err)
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("control socket: %w", err)
		}
		go d.serveCtlConn(c)
	}
}

func (d *Daemon) serveCtlConn(c net.Conn) {
	defer c.Close()
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64*1024), MaxRequestLen)
	enc := json.NewEncoder(c)
	for sc.Scan() {
		var rep Reply
		req, err := DecodeRequest(sc.Bytes())
		if err != nil {
			rep.Error = err.Error()
		} else {
			rep = d.safeExecute(req)
			d.Log.Debug("control command", zap.String("command", req.Command), zap.Strings("args", req.Args), zap.String("error", rep.Error))
		}
		if err := enc.Encode(rep); err != nil {
			return
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		// The stream cannot be resynchronised: say why, then close.
		enc.Encode(Reply{Error: fmt.Sprintf("bad request: longer than %d bytes", MaxRequestLen)})
	}
}

// Limits of one control request (a line of JSON).
const (
	MaxRequestLen = 1 << 20
	MaxArgs       = 256
	MaxArgLen     = 4096
)

// DecodeRequest parses one request line, refusing what no govs command
// sends: unknown keys, a missing command, too many or too long words and
// control characters (a name with a newline would corrupt `show`).
func DecodeRequest(line []byte) (Request, error) {
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Request{}, fmt.Errorf("bad request: %w", err)
	}
	if dec.More() {
		return Request{}, errors.New("bad request: more than one JSON value on the line")
	}
	if req.Command == "" {
		return Request{}, errors.New(`bad request: no "command"`)
	}
	if len(req.Args) > MaxArgs {
		return Request{}, fmt.Errorf("bad request: %d arguments, at most %d", len(req.Args), MaxArgs)
	}
	for i, w := range append([]string{req.Command}, req.Args...) {
		if len(w) > MaxArgLen {
			return Request{}, fmt.Errorf("bad request: word %d is %d bytes long, at most %d", i, len(w), MaxArgLen)
		}
		if j := strings.IndexFunc(w, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }); j >= 0 {
			return Request{}, fmt.Errorf("bad request: word %d has a control character or invalid UTF-8 at byte %d", i, j)
		}
	}
	return req, nil
}

// ctlPanics counts control requests that panicked (CtlPanics).
var ctlPanics atomic.Uint64

// CtlPanics is the number of control requests that panicked; each was
// answered with an error and logged with its stack, and the daemon went on.
func CtlPanics() uint64 { return ctlPanics.Load() }

// safeExecute is Execute that turns a panic into an error reply, so that a
// bug one command hits does not take every bridge of the node down.
func (d *Daemon) safeExecute(req Request) (rep Reply) {
	defer func() {
		if r := recover(); r != nil {
			n := ctlPanics.Add(1)
			d.Log.Error("control command panicked", zap.String("command", req.Command), zap.Strings("args", req.Args),
				zap.Any("panic", r), zap.Uint64("total", n), zap.ByteString("stack", debug.Stack()))
			rep = Reply{Error: fmt.Sprintf("internal error in %s: %v (logged by govs-vswitchd)", req.Command, r)}
		}
	}()
	return d.Execute(req)
}

// Call sends one command to the daemon whose rundir is given.
func Call(rundir string, req Request) (Reply, error) {
	path := filepath.Join(rundir, CtlSocketName)
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return Reply{}, fmt.Errorf("cannot reach govs-vswitchd at %s (is it running with --rundir %s?): %w", path, rundir, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return Reply{}, err
	}
	var rep Reply
	if err := json.NewDecoder(bufio.NewReader(c)).Decode(&rep); err != nil {
		return Reply{}, fmt.Errorf("reading reply: %w", err)
	}
	return rep, nil
}
