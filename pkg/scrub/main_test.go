package scrub

import (
	"os"
	"testing"

	"github.com/ctxtool/ctxtool/internal/testkit/testtmp"
)

func TestMain(m *testing.M) { os.Exit(testtmp.Run(m.Run)) }
