package simcli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// openInput opens the file a flag names. A relative path that does not
// exist gets an error that says where it was looked for: the README's
// tour gives paths relative to the repository root (and ../shared beside
// it), so from elsewhere they must be made absolute or the command run
// from there.
func openInput(flag, path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, inputError(flag, path, err)
	}
	return f, nil
}

// readInput reads the whole file a flag names, with openInput's errors.
func readInput(flag, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, inputError(flag, path, err)
	}
	return b, nil
}

func inputError(flag, path string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) || filepath.IsAbs(path) {
		return fmt.Errorf("%s: %w", flag, err)
	}
	wd, _ := os.Getwd()
	return fmt.Errorf("%s: %w (a relative path is read from the current directory, %s; the README's examples are relative to the repository root, with the data in ../shared/data beside it)", flag, err, wd)
}

// quietOutput makes cmd print nothing on its standard output when quiet
// is set: with --quiet a command only writes its files, and errors still
// go to standard error.
func quietOutput(cmd *cobra.Command, quiet bool) {
	if quiet {
		cmd.SetOut(io.Discard)
	}
}
