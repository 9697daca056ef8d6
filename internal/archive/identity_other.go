//go:build !unix

package archive

import "os"

func fileNumber(os.FileInfo) (string, bool) { return "", false }
