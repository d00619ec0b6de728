package filelock

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// otherHolders returns the pids of the other processes that have a file
// descriptor open on the file fi describes, found in /proc/<pid>/fd. ok is
// false where /proc cannot tell (not Linux, /proc not mounted): the caller
// then relies on its settle time alone, as it does for the processes whose
// descriptors this one may not read (other users', unless it runs as root;
// other pid namespaces). Our own process is left out: ctxtool writes the
// session only under its lock.
func otherHolders(fi os.FileInfo) (pids []int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, false
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return nil, false
	}
	procs, err := readNames("/proc")
	if err != nil {
		return nil, false
	}
	self := os.Getpid()
	for _, name := range procs {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		if holds("/proc/"+name+"/fd/", st) {
			pids = append(pids, pid)
		}
	}
	return pids, true
}

// holds reports whether one of the descriptors in dir (a /proc/<pid>/fd/)
// is open for writing on the file st describes. Only descriptors whose link
// is a path are stat'ed (pipes, sockets and the like are most of them); a
// descriptor open only for reading (`tail -f`, a pager, an editor's
// buffer) cannot write late lines, so it does not hold the rewrite up.
func holds(dir string, st *syscall.Stat_t) bool {
	fds, err := readNames(dir)
	if err != nil {
		return false // gone, or not ours to read
	}
	for _, fd := range fds {
		link, err := os.Readlink(dir + fd)
		if err != nil || !strings.HasPrefix(link, "/") {
			continue
		}
		var fst syscall.Stat_t
		if syscall.Stat(dir+fd, &fst) == nil && fst.Dev == st.Dev && fst.Ino == st.Ino && !readOnlyFD(dir, fd) {
			return true
		}
	}
	return false
}

// readOnlyFD reports whether descriptor fd of dir (a /proc/<pid>/fd/) was
// opened read-only, from the "flags:" line of its fdinfo (octal; the access
// mode is its low two bits). When that cannot be read, the descriptor
// counts as a writer.
func readOnlyFD(dir, fd string) bool {
	info, err := os.ReadFile(strings.TrimSuffix(dir, "fd/") + "fdinfo/" + fd)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(info), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err == nil && flags&syscall.O_ACCMODE == syscall.O_RDONLY
		}
	}
	return false
}

func readNames(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
