package tumbler

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// RedisError is an error reply from the server (a RESP "-ERR ..." line).
type RedisError string

func (e RedisError) Error() string { return string(e) }

// conn is the package's own RESP2 connection, used for control commands only, so that the
// package needs nothing outside the standard library.
type conn struct {
	c  net.Conn
	rd *bufio.Reader
}

func dialConn(addr string, tlsConf *tls.Config, user, pass string, timeout time.Duration) (*conn, error) {
	d := net.Dialer{Timeout: timeout}
	var c net.Conn
	var err error
	if tlsConf != nil {
		c, err = tls.DialWithDialer(&d, "tcp", addr, tlsConf)
	} else {
		c, err = d.Dial("tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	cn := &conn{c: c, rd: bufio.NewReader(c)}
	if pass != "" {
		args := []string{"AUTH", pass}
		if user != "" {
			args = []string{"AUTH", user, pass}
		}
		if _, err := cn.do(timeout, args...); err != nil {
			cn.close()
			return nil, fmt.Errorf("AUTH on the control connection: %w", err)
		}
	}
	return cn, nil
}

func (cn *conn) close() { _ = cn.c.Close() }

// appendCommand appends args to buf as one RESP command (an array of bulk strings).
func appendCommand(buf []byte, args []string) []byte {
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(args)), 10)
	buf = append(buf, '\r', '\n')
	for _, a := range args {
		buf = append(buf, '$')
		buf = strconv.AppendInt(buf, int64(len(a)), 10)
		buf = append(buf, '\r', '\n')
		buf = append(buf, a...)
		buf = append(buf, '\r', '\n')
	}
	return buf
}

// do sends one command and reads its reply. A RedisError is returned as the error.
func (cn *conn) do(timeout time.Duration, args ...string) (interface{}, error) {
	_ = cn.c.SetDeadline(time.Now().Add(timeout))
	buf := appendCommand(make([]byte, 0, 64), args)
	if _, err := cn.c.Write(buf); err != nil {
		return nil, err
	}
	v, err := readReply(cn.rd, 0)
	if err != nil {
		return nil, err
	}
	if e, ok := v.(RedisError); ok {
		return nil, e
	}
	return v, nil
}

// pipeline sends every command at once and reads their replies in order. An error reply
// stays in its place as a RedisError; err is for the connection and the protocol.
func (cn *conn) pipeline(timeout time.Duration, cmds [][]string) ([]interface{}, error) {
	_ = cn.c.SetDeadline(time.Now().Add(timeout))
	var buf []byte
	for _, args := range cmds {
		buf = appendCommand(buf, args)
	}
	if _, err := cn.c.Write(buf); err != nil {
		return nil, err
	}
	out := make([]interface{}, len(cmds))
	for i := range cmds {
		v, err := readReply(cn.rd, 0)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

var errProtocol = errors.New("tumbler: protocol error in reply")

// readReply reads one RESP2 reply: string (simple), RedisError, int64, []byte or nil (bulk),
// []interface{} (array). RESP3 types are not needed: the control connection never says HELLO 3.
func readReply(rd *bufio.Reader, depth int) (interface{}, error) {
	if depth > 16 {
		return nil, errProtocol
	}
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, errProtocol
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return RedisError(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, errProtocol
		}
		if n < 0 {
			return nil, nil
		}
		if n > 512<<20 {
			return nil, errProtocol
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		return b[:n], nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, errProtocol
		}
		if n < 0 {
			return nil, nil
		}
		if n > 1<<20 {
			return nil, errProtocol
		}
		out := make([]interface{}, n)
		for i := range out {
			if out[i], err = readReply(rd, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, errProtocol
}
