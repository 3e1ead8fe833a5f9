package skills

import (
	"os"

	"golang.org/x/sys/unix"
)

// networkFS reports filesystems where inotify sees only the changes made
// through this machine's kernel: an edit made on the server or another
// client is never reported, so such a folder is polled, not watched.
func networkFS(path string) (string, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "", false
	}
	switch uint32(st.Type) {
	case unix.NFS_SUPER_MAGIC:
		return "nfs", true
	case unix.SMB_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC, unix.CIFS_SUPER_MAGIC:
		return "smb", true
	case unix.V9FS_MAGIC:
		return "9p", true
	case unix.AFS_SUPER_MAGIC, unix.AFS_FS_MAGIC:
		return "afs", true
	case unix.CEPH_SUPER_MAGIC:
		return "ceph", true
	}
	return "", false
}

// OutputGone returns a channel that closes when f (stdout) can no longer
// be written because its reader went away: poll with no requested events
// still reports POLLERR (a pipe whose reader closed) and POLLHUP (a hung-up
// terminal or socket). A regular file never reports either. The watch then
// stops without waiting for its next event to fail with EPIPE.
func OutputGone(f *os.File, stop <-chan struct{}) <-chan struct{} {
	gone := make(chan struct{})
	fd := int32(f.Fd())
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			fds := []unix.PollFd{{Fd: fd}}
			n, err := unix.Poll(fds, 500)
			if err != nil && err != unix.EINTR {
				return
			}
			if n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 {
				close(gone)
				return
			}
		}
	}()
	return gone
}
