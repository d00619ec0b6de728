package filelock

import "os"

// Writers returns the pids of the other processes that have the file fi
// describes open for writing (ok false where /proc cannot tell): for
// callers that move a session file away and must know no writer still
// holds it (pkg/prune), as sessionwrite.Rewrite does before it stops carrying.
func Writers(fi os.FileInfo) (pids []int, ok bool) { return otherHolders(fi) }
