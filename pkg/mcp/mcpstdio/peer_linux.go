package mcpstdio

import (
	"os"

	"golang.org/x/sys/unix"
)

// watchPeerEpoll is watchPeerClosed without a thread parked in a system
// call: fd goes into a private epoll instance with no events asked for
// (EPOLLERR and EPOLLHUP are always reported), and that instance, which
// is readable once it has an event, is waited on by the runtime's poller
// like any socket. The poll(2) loop it replaces kept a thread blocked in
// the kernel for a second at a time; with the relay's own blocking read of
// stdin that left the scheduler no idle slot, so the runtime's monitor
// stayed awake to take slots back, costing every relayed message.
// The file description of fd is not touched (no O_NONBLOCK on it). It
// reports false when any step fails; the caller then polls as before.
func watchPeerEpoll(fd int, gone chan struct{}, done <-chan struct{}) bool {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	if unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: 0, Fd: int32(fd)}) != nil || unix.SetNonblock(ep, true) != nil {
		_ = unix.Close(ep) // an epoll descriptor: nothing to lose
		return false
	}
	f := os.NewFile(uintptr(ep), "peer-watch")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close() // as above
		return false
	}
	go func() {
		<-done
		_ = f.Close() // ends the wait below
	}()
	go func() {
		var evs [1]unix.EpollEvent
		err := rc.Read(func(uintptr) bool {
			n, _ := unix.EpollWait(ep, evs[:], 0)
			return n > 0
		})
		if err == nil {
			close(gone)
		}
	}()
	return true
}
