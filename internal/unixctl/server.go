// Package unixctl is Open vSwitch's unixctl protocol, the control socket
// `ovs-appctl` talks to: JSON-RPC 1.0 objects sent back to back over a
// Unix stream socket (no framing, no newline), each request
// {"id":N,"method":"CMD","params":["ARG",...]} answered by
// {"id":N,"result":"TEXT","error":null} or {"id":N,"error":"TEXT"}.
// The real ovs-appctl prints a result and exits 0, or prints the error
// and exits 2.
package unixctl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Handler runs one command with its arguments (everything after the
// command name) and returns the text ovs-appctl prints, or an error whose
// text it prints before exiting 2.
type Handler func(args []string) (string, error)

// Command is one registered command.
type Command struct {
	Name    string
	Usage   string // the argument synopsis list-commands prints
	MinArgs int
	MaxArgs int // -1: any number
	Run     Handler
	// After, if set, runs once the success reply has been sent (exit:
	// the client gets its answer before the daemon goes away).
	After func()
}

// Server dispatches unixctl requests to registered commands.
type Server struct {
	Log *zap.Logger

	mu       sync.RWMutex
	commands map[string]*Command
	// Panics counts handler panics turned into error replies.
	Panics atomic.Uint64
	// panicLogged makes a panic's stack appear in the log once.
	panicLogged atomic.Bool
}

// NewServer returns a server with OVS's built-in list-commands command.
func NewServer(log *zap.Logger) *Server {
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{Log: log, commands: map[string]*Command{}}
	s.Register("list-commands", "", 0, 0, func([]string) (string, error) { return s.ListCommands(), nil })
	return s
}

// Register adds a command; a second registration of a name replaces it.
func (s *Server) Register(name, usage string, minArgs, maxArgs int, run Handler) *Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Command{Name: name, Usage: usage, MinArgs: minArgs, MaxArgs: maxArgs, Run: run}
	s.commands[name] = c
	return c
}

// ListCommands prints the commands as OVS's list-commands does: a header,
// then each name padded to 24 columns and its usage, sorted by name.
func (s *Server) ListCommands() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	names := make([]string, 0, len(s.commands))
	for n := range s.commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("The available commands are:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-23s %s\n", n, s.commands[n].Usage)
	}
	return b.String()
}

// Request is a unixctl JSON-RPC request. ID is kept as raw JSON: OVS
// echoes whatever the client sent.
type Request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params []string        `json:"params"`
}

// DecodeRequest checks one JSON-RPC object as OVS's unixctl server does:
// a request needs an id, a string method and an array of strings as
// params; anything else is an error that names the problem.
func DecodeRequest(raw []byte) (Request, error) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return Request{}, fmt.Errorf("message is not a JSON object: %w", err)
	}
	var r Request
	if len(m.ID) == 0 || string(m.ID) == "null" {
		return r, errors.New("received unexpected notification (a message without an id)")
	}
	r.ID = m.ID
	if err := json.Unmarshal(m.Method, &r.Method); err != nil || len(m.Method) == 0 {
		return r, errors.New("\"method\" member must be a string")
	}
	if len(m.Params) == 0 || m.Params[0] != '[' {
		return r, errors.New("\"params\" must be an array")
	}
	var params []json.RawMessage
	if err := json.Unmarshal(m.Params, &params); err != nil {
		return r, errors.New("\"params\" must be an array")
	}
	r.Params = make([]string, len(params))
	for i, p := range params {
		if err := json.Unmarshal(p, &r.Params[i]); err != nil || p[0] != '"' {
			return r, fmt.Errorf("\"%s\" command has non-string argument: %s", r.Method, p)
		}
	}
	return r, nil
}

// Execute runs one request and returns the result text or the error text
// (with OVS's trailing newline). A panic in the handler becomes an error
// reply: the daemon goes on.
func (s *Server) Execute(method string, params []string) (result string, errText string) {
	result, errText, _ = s.execute(method, params)
	return result, errText
}

func (s *Server) execute(method string, params []string) (result string, errText string, after func()) {
	s.mu.RLock()
	c := s.commands[method]
	s.mu.RUnlock()
	switch {
	case c == nil:
		return "", fmt.Sprintf("\"%s\" is not a valid command (use \"list-commands\" to see a list of valid commands)\n", method), nil
	case len(params) < c.MinArgs:
		return "", fmt.Sprintf("\"%s\" command requires at least %d arguments\n", method, c.MinArgs), nil
	case c.MaxArgs >= 0 && len(params) > c.MaxArgs:
		return "", fmt.Sprintf("\"%s\" command takes at most %d arguments\n", method, c.MaxArgs), nil
	}
	defer func() {
		if r := recover(); r != nil {
			s.Panics.Add(1)
			if s.panicLogged.CompareAndSwap(false, true) {
				s.Log.Error("unixctl command panicked (stack logged once)", zap.String("command", method),
					zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
			} else {
				s.Log.Error("unixctl command panicked", zap.String("command", method), zap.Any("panic", r))
			}
			result, errText, after = "", fmt.Sprintf("%s: internal error: %v\n", method, r), nil
		}
	}()
	out, err := c.Run(params)
	if err != nil {
		msg := err.Error()
		if !strings.HasSuffix(msg, "\n") {
			msg += "\n"
		}
		return "", msg, nil
	}
	// OVS's unixctl ends every non-empty reply with a newline.
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out, "", c.After
}

// reply is the JSON-RPC reply. Success carries "error":null; failure
// carries only "error", as OVS sends them.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Result *string         `json:"result,omitempty"`
	Error  *string         `json:"error"`
}

func encodeReply(id json.RawMessage, result, errText string, failed bool) []byte {
	r := reply{ID: id}
	if failed {
		r.Error = &errText
	} else {
		r.Result = &result
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(r)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// maxRequest bounds one request: OVS's own commands are far smaller, and
// a client streaming an endless object must not grow the daemon.
const maxRequest = 1 << 20

// ServeConn answers requests on one connection until the client closes it
// or sends something that is not a request.
func (s *Server) ServeConn(c net.Conn) {
	defer c.Close()
	// ovs-appctl sends one request per connection: a few requests' worth
	// bounds what one client can make the daemon buffer.
	dec := json.NewDecoder(io.LimitReader(c, 4*maxRequest))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.Log.Debug("unixctl: closing connection", zap.Error(err))
			}
			return
		}
		if len(raw) > maxRequest {
			s.Log.Warn("unixctl: request too long, closing connection", zap.Int("bytes", len(raw)))
			return
		}
		req, err := DecodeRequest(raw)
		if err != nil {
			// OVS logs and drops the connection on a malformed message.
			s.Log.Warn("unixctl: bad request, closing connection", zap.Error(err))
			return
		}
		res, errText, after := s.execute(req.Method, req.Params)
		c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		_, err = c.Write(encodeReply(req.ID, res, errText, errText != ""))
		if after != nil {
			after()
		}
		if err != nil {
			return
		}
	}
}

// Serve accepts connections on ln until ctx ends, then closes ln (which
// removes the socket file).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
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
			return fmt.Errorf("unixctl accept: %w", err)
		}
		go s.ServeConn(c)
	}
}
