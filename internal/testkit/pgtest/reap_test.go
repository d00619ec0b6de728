package pgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestReapClustersRemovesOnlyDeadOnes runs the reaper on fake clusters: it
// must remove those of killed runs and keep any whose server or test process
// still runs (other test processes use them).
func TestReapClustersRemovesOnlyDeadOnes(t *testing.T) {
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dead, live := strconv.Itoa(c.Process.Pid), strconv.Itoa(os.Getpid())
	parent := t.TempDir()
	old := time.Now().Add(-time.Hour)
	cases := []struct {
		name, postmaster string
		mtime            time.Time
		kept             bool
	}{
		{clusterPrefix + dead + "-1", "", time.Now(), false},          // killed run, server quit
		{clusterPrefix + dead + "-2", dead + "\n/data\n", old, false}, // server killed too
		{clusterPrefix + dead + "-3", live + "\n/data\n", old, true},  // server still running
		{clusterPrefix + live + "-4", "", old, true},                  // owner running (initdb)
		{clusterPrefix + "123456", "", old, false},                    // older version's, dead
		{clusterPrefix + "654321", "", time.Now(), true},              // older version's, maybe in initdb
		{clusterPrefix + "777", live + "\n", old, true},               // older version's, running
		{"TestOther" + dead + "-5", "", old, true},                    // not a cluster
	}
	for _, k := range cases {
		data := filepath.Join(parent, k.name, "data")
		if err := os.MkdirAll(data, 0o755); err != nil {
			t.Fatal(err)
		}
		if k.postmaster != "" {
			os.WriteFile(filepath.Join(data, "postmaster.pid"), []byte(k.postmaster), 0o600)
		}
		os.Chtimes(filepath.Join(parent, k.name), k.mtime, k.mtime)
	}
	reapClusters(parent, 10*time.Minute)
	for _, k := range cases {
		_, err := os.Stat(filepath.Join(parent, k.name))
		if (err == nil) != k.kept {
			t.Errorf("%s: kept = %v, want %v", k.name, err == nil, k.kept)
		}
	}
}
