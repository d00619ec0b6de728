package recall_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/ctxtool/ctxtool/pkg/recall"
	"github.com/jackc/pgx/v5"
)

// An index made by a newer ctxtool (a higher schema number) is refused and
// left as it is: emptying it, as an older index is emptied, would let a
// stale ctxtool throw away what the current one built, on PostgreSQL for
// every machine at once.
func TestNewerIndexIsLeftAlone(t *testing.T) {
	eachBackend(t, func(t *testing.T, k kit) {
		dir := t.TempDir()
		facts := genSessions(t, dir, 1, 30)
		loc := k.location(t)
		ix := openAt(t, loc)
		indexAll(t, ix, sessionFiles(t, dir)...)
		ix.Close()

		table := "meta"
		if k.name == "postgres" {
			table = "ctxtool_recall_meta"
		}
		was := metaSchema(t, k, loc, table, "")
		metaSchema(t, k, loc, table, "999")
		if _, err := recall.OpenURL(loc); err == nil || !strings.Contains(err.Error(), "newer ctxtool") || !strings.Contains(err.Error(), "--index") {
			t.Fatalf("open of a schema 999 index: %v, want a refusal naming the remedy", err)
		}
		if v := metaSchema(t, k, loc, table, ""); v != "999" {
			t.Fatalf("the refused open changed the schema to %q", v)
		}
		metaSchema(t, k, loc, table, was)
		ix = openAt(t, loc)
		if why := ix.Emptied(); why != "" {
			t.Fatalf("reopened at its own schema: emptied (%s)", why)
		}
		res, err := ix.Search(context.Background(), facts[0].Name, recall.SearchOptions{MaxResults: 5})
		if err != nil || len(res.Hits) == 0 {
			t.Fatalf("after the refused open, %q finds %d hits (%v): the index lost its rows", facts[0].Name, len(res.Hits), err)
		}
	})
}

// metaSchema sets the index's recorded schema to set (when not "") and
// returns the value it had.
func metaSchema(t *testing.T, k kit, loc, table, set string) string {
	t.Helper()
	ctx := context.Background()
	var v string
	if k.name == "postgres" {
		c, err := pgx.Connect(ctx, loc)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if err := c.QueryRow(ctx, `SELECT value FROM `+table+` WHERE key = 'schema'`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if set != "" {
			if _, err := c.Exec(ctx, `UPDATE `+table+` SET value = $1 WHERE key = 'schema'`, set); err != nil {
				t.Fatal(err)
			}
		}
		return v
	}
	db, err := sql.Open("sqlite", loc)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT value FROM ` + table + ` WHERE key = 'schema'`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if set != "" {
		if _, err := db.Exec(`UPDATE `+table+` SET value = ? WHERE key = 'schema'`, set); err != nil {
			t.Fatal(err)
		}
	}
	return v
}
