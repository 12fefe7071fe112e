package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/volanogo/volanogo/internal/buildinfo"
)

func init() { register(newManCmd) }

// newManCmd is the hidden `volanogo man DIR`: one man page (section 1) per
// command, for packagers. Cobra itself provides `volanogo completion`.
func newManCmd(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:    "man DIR",
		Short:  "Write a man page for every command into DIR",
		Args:   cobra.ExactArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			root := cmd.Root()
			// No "Auto generated" history line: it carries today's date,
			// which would make the pages differ from one build to the next.
			disableAutoGenTag(root)
			header := &doc.GenManHeader{
				Title:   "VOLANOGO",
				Section: "1",
				Source:  "volanogo " + buildinfo.Get().Version,
				Manual:  "volanogo manual",
			}
			if err := doc.GenManTree(root, header, dir); err != nil {
				return fmt.Errorf("writing man pages: %w", err)
			}
			_, err := fmt.Fprintf(io.Out, "man pages written to %s\n", dir)
			return err
		},
	}
}

func disableAutoGenTag(c *cobra.Command) {
	c.DisableAutoGenTag = true
	for _, sub := range c.Commands() {
		disableAutoGenTag(sub)
	}
}
