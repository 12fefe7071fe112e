package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/volanogo/volanogo/internal/campaign"
)

func init() { register(newShardCmd) }

// newShardCmd is the hidden command that runs one shard process of
// `volanogo load --procs`: its spec on standard input, the shard protocol
// on standard input and output (internal/handshake).
func newShardCmd(io *IO) *cobra.Command {
	return &cobra.Command{
		Use:    "shard",
		Short:  "Run one shard process of 'volanogo load --procs' (spec and start barrier on standard input)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := campaign.RunShard(cmd.Context(), io.In, io.Out)
			switch {
			case err == nil:
				return nil
			case campaign.IsUsage(err):
				return &UsageError{Err: err}
			case errors.Is(err, campaign.ErrInterrupted):
				return &ExitError{Code: exitInterrupted}
			case errors.Is(err, campaign.ErrFailed):
				return &ExitError{Code: 1}
			}
			return err
		},
	}
}
