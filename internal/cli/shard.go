package cli

import (
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
			return campaignExit(campaign.RunShard(cmd.Context(), io.In, io.Out))
		},
	}
}
