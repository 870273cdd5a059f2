//go:build unix && !aix

package firebird

import (
	"errors"
	"syscall"
)

// quiet reports whether the wire's socket is open with nothing waiting to
// be read, as it is between calls (the driver's deferred answers are read
// before the next request's): not when the server closed or reset it (a
// restart) or sent what nobody asked for. It peeks without waiting, one
// system call (go-sql-driver/mysql checks a pooled connection so). A DBA's
// kill is not seen: Firebird closes that socket at the next request.
func (w *wire) quiet() bool {
	sc, ok := w.Conn.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var peekErr error
	buf := [1]byte{}
	if err := rc.Read(func(fd uintptr) bool {
		_, _, peekErr = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	}); err != nil {
		return false
	}
	// Only "nothing to read yet" is quiet: a byte is a word nobody asked
	// for, none at all the server's close, any other error its reset.
	return errors.Is(peekErr, syscall.EAGAIN) || errors.Is(peekErr, syscall.EWOULDBLOCK)
}
