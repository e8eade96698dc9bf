package proc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Environ reads /proc/PID/environ: the environment the process was
// started with (not what it set since). ErrNoProcess when it is gone; a
// permission error when it belongs to another user.
func Environ(pid int) ([]string, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
		}
		return nil, fmt.Errorf("read /proc/%d/environ: %w", pid, err)
	}
	var env []string
	for _, kv := range bytes.Split(data, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	return env, nil
}

// socketInodes returns the inodes of the sockets process pid holds open
// (the fds whose link reads socket:[N]).
func socketInodes(pid int) (map[uint32]bool, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
		}
		return nil, err
	}
	inos := map[uint32]bool{}
	for _, e := range ents {
		l, err := os.Readlink(dir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(l, "socket:[") || !strings.HasSuffix(l, "]") {
			continue
		}
		n, err := strconv.ParseUint(l[len("socket:["):len(l)-1], 10, 32)
		if err == nil {
			inos[uint32(n)] = true
		}
	}
	return inos, nil
}

// unixPeers dumps every Unix socket of this network namespace through
// NETLINK_SOCK_DIAG and returns each one's peer inode (connected sockets
// only): inode → peer inode.
func unixPeers() (map[uint32]uint32, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, fmt.Errorf("netlink sock_diag: %w", err)
	}
	defer unix.Close(fd)
	// nlmsghdr (16) + unix_diag_req (24).
	req := make([]byte, 16+24)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], 1)
	req[16] = unix.AF_UNIX
	binary.NativeEndian.PutUint32(req[20:], 0xffffffff) // every state
	binary.NativeEndian.PutUint32(req[28:], udiagShowPeer)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("netlink sock_diag: send: %w", err)
	}
	peers := map[uint32]uint32{}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, fmt.Errorf("netlink sock_diag: receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("netlink sock_diag: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return peers, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
						return nil, fmt.Errorf("netlink sock_diag: %w", unix.Errno(-e))
					}
				}
				return peers, nil
			}
			parseUnixDiag(m.Data, peers)
		}
	}
}

// udiagShowPeer and unixDiagPeer are UDIAG_SHOW_PEER and UNIX_DIAG_PEER of
// <linux/unix_diag.h>.
const (
	udiagShowPeer = 0x4
	unixDiagPeer  = 2
)

// parseUnixDiag reads one unix_diag_msg (16 bytes: family, type, state,
// pad, inode, cookie) and its attributes.
func parseUnixDiag(d []byte, peers map[uint32]uint32) {
	if len(d) < 16 {
		return
	}
	ino := binary.NativeEndian.Uint32(d[4:])
	for a := d[16:]; len(a) >= 4; {
		l := int(binary.NativeEndian.Uint16(a[0:]))
		t := binary.NativeEndian.Uint16(a[2:])
		if l < 4 || l > len(a) {
			return
		}
		if t == unixDiagPeer && l >= 8 {
			peers[ino] = binary.NativeEndian.Uint32(a[4:])
		}
		al := (l + 3) &^ 3
		if al > len(a) {
			return
		}
		a = a[al:]
	}
}

// UnixClients returns the processes, other than server itself, that hold
// the other end of a Unix-socket connection server holds: the clients
// connected to its listener (and anything else it talks to over a Unix
// socket pair). Sorted, each once.
func UnixClients(server int) ([]int, error) {
	mine, err := socketInodes(server)
	if err != nil {
		return nil, err
	}
	peers, err := unixPeers()
	if err != nil {
		return nil, err
	}
	want := map[uint32]bool{}
	for ino, peer := range peers {
		if mine[peer] && !mine[ino] {
			want[ino] = true
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	pids, err := List()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, pid := range pids {
		if pid == server {
			continue
		}
		inos, err := socketInodes(pid)
		if err != nil {
			continue
		}
		for ino := range inos {
			if want[ino] {
				out = append(out, pid)
				break
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// ListensRemote reports whether process pid listens on a TCP socket (a
// websocket listener, say): it reads the inodes of /proc/net/tcp{,6}
// in LISTEN state against the process's sockets.
func ListensRemote(pid int) (bool, error) {
	mine, err := socketInodes(pid)
	if err != nil {
		return false, err
	}
	for _, f := range []string{"/proc/" + strconv.Itoa(pid) + "/net/tcp", "/proc/" + strconv.Itoa(pid) + "/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for i, line := range strings.Split(string(data), "\n") {
			fs := strings.Fields(line)
			if i == 0 || len(fs) < 10 || fs[3] != "0A" { // 0A: TCP_LISTEN
				continue
			}
			if n, err := strconv.ParseUint(fs[9], 10, 32); err == nil && mine[uint32(n)] {
				return true, nil
			}
		}
	}
	return false, nil
}
