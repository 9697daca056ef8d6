// Package docgen writes the generated documentation of the binaries: the
// markdown command reference and man pages under docs/, and the shell
// completions under completions/. TestGeneratedFilesAreUpToDate fails when
// the committed files differ from what the code generates; run
// scripts/gen-docs to regenerate them.
package docgen

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Files returns every generated file, by path relative to the repository
// root, for each root command. date (YYYY-MM-DD) is the man pages': the
// build's, as scripts/gen-docs finds it.
func Files(date string, roots ...*cobra.Command) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, root := range roots {
		root.DisableAutoGenTag = true
		root.InitDefaultHelpCmd()
		root.InitDefaultCompletionCmd()
		name := root.Name()

		tmp, err := os.MkdirTemp("", "docgen")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		if err := withMarkdownLongs(root, func() error { return doc.GenMarkdownTree(root, tmp) }); err != nil {
			return nil, fmt.Errorf("markdown for %s: %w", name, err)
		}
		if err := collect(files, tmp, "docs/reference"); err != nil {
			return nil, err
		}
		var pages func(*cobra.Command)
		pages = func(c *cobra.Command) {
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
					pages(sub)
				}
			}
			files["docs/man/"+manName(c)+".1"] = genMan(c, date)
		}
		pages(root)
		var bash, zsh, fish, ps bytes.Buffer
		if err := root.GenBashCompletionV2(&bash, true); err != nil {
			return nil, err
		}
		if err := root.GenZshCompletion(&zsh); err != nil {
			return nil, err
		}
		if err := root.GenFishCompletion(&fish, true); err != nil {
			return nil, err
		}
		if err := root.GenPowerShellCompletionWithDesc(&ps); err != nil {
			return nil, err
		}
		files["completions/"+name+".bash"] = bash.Bytes()
		files["completions/_"+name] = zsh.Bytes()
		files["completions/"+name+".fish"] = fish.Bytes()
		files["completions/"+name+".ps1"] = ps.Bytes()
	}
	return files, nil
}

func collect(files map[string][]byte, dir, into string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		files[into+"/"+e.Name()] = b
	}
	return nil
}
