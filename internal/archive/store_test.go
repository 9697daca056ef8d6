package archive_test

import (
	"testing"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/archive/storetest"
	"github.com/deadletter/deadletter/internal/testsupport"
)

func TestLocalStoreContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) archive.Store {
		s, err := archive.NewLocal(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestS3StoreContract(t *testing.T) {
	client := testsupport.S3Client(t)
	storetest.Run(t, func(t *testing.T) archive.Store {
		s := archive.NewS3(client, testsupport.NewBucket(t, client))
		s.PageSize = 4 // force several pages, with and without a delimiter
		return s
	})
}
