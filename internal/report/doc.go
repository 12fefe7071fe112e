// Package report turns result documents (internal/results) into the Volano
// Report: the tables, footnotes and environments that `volanogo report`
// prints as text, markdown, JSON, CSV or one self-contained HTML page.
//
// The pipeline is Build, then Render:
//
//	rep, err := report.Build(docs, report.Options{Discard: 1, Best: 2, Of: 3})
//	err = rep.Render(w, "text")
//
// Build never reads files and never prints; the command (internal/cli)
// reads the documents and reports the files it skipped.
//
// # The model
//
// Shards of one run (documents with the same run id and a Shard) are merged
// first. Every document is then placed in a cell:
//
//   - a row, the platform: its Label (--by label, the default), its server
//     (--by server: its identity, results.ServerInfo.Name, when the run
//     recorded one, else its command line or address), or its label and
//     the server's processor
//     count (--by cpus); when documents of one label (or server) differ by
//     engines (results.Document.Engines: the server's engine as it said,
//     the client's), the engines follow the name in parentheses, "fast
//     (serve epoll / load goroutine)", so that engines compare as
//     platforms do; documents that record no engine keep the name alone;
//   - a kind: turn-taking ("turns", Mark's test), paced (open loop), churn
//     or storm;
//   - a step: the connection count rooms × users for turn-taking runs, the
//     concurrent users for paced runs;
//   - the server's processor count: Config.ServerCPUs when the client
//     restricted the server, else the GOMAXPROCS or CPU count the server
//     reported; a run whose count is unknown joins the runs of the same step
//     with the highest known count (an unrestricted server had the whole
//     machine).
//
// Where one row has runs at several processor counts for one step, the
// "Is it fast?" and "Does it scale?" cells use the highest count (the
// whole machine); the others appear in the processor scalability table.
//
// # The run rule
//
// The runs of a cell are ordered by their Run number, then their start time
// (then run id and score, so that the order of the input files never
// matters). The first Options.Discard runs are dropped, and so is any run
// the load marked Discarded (normally the same first run). Of the rest, the
// first Options.Of are the counted results. When the positional discard
// would leave a cell with nothing (a single run of `volanogo load`, which
// marks nothing discarded), its unmarked runs are counted after all and
// the report says so in its warnings, rather than showing nothing. The score is the average of the
// best Options.Best passed counted results, rounded half up, as Mark rounds
// its own score. The cell also shows the median and the spread (min–max) of
// its passed counted results.
//
// A cell fails when fewer of its counted runs passed than
// min(Best, counted runs): it shows "----" and the footnote letters of the
// failures, as the Volano Report did ("----a"). A cell that has a score but
// also failed runs, or passed runs that recorded failures all the same,
// keeps its score and gets the letters ("1218a"). Steps of a
// row above a failed step that have no runs show "----".
//
// Mark gives no score to a run whose timed phase lasted under one second:
// its document has Score 0 although it passed. Such a turn-taking run is
// never counted as a score of 0: it prints "----" with the footnote "Ran
// under 1 second: no score (raise -count)", and the cell averages the runs
// that have a score. When fewer of them have one than min(Best, counted
// runs) (but enough passed), the cell has no score (Cell.NoScore): it
// prints "----" and its letters as a failed cell does, but it is no
// failure: the steps above it are not marked, and it sorts after the
// scores in "Is it fast?".
//
// # Is it fast?
//
// "Is it fast?" compares the platforms at one connection count:
// Options.Step, or else the turn-taking step at which the most platforms
// have a score (ties: the one nearest 1000 connections, Mark's default of
// 50 rooms × 20 users, then the smaller). Rows are sorted best score first,
// and every other table keeps that order. "Does it scale?" appears when the
// turn-taking runs span two connection counts or more.
//
// # Limit
//
// A connection is carried once it has completed its Access and entered
// its room (results.Connections.Carried; in older documents, which lack
// the count, the most connections a run held at once, Peak, else
// Established: those count connections the server accepted and closed at
// once). The Limit of a row comes from its turn-taking runs, failed and
// discarded ones included, a try that --retry replaced left out:
//
//   - when no step failed above the largest step a run passed, the most
//     any run carried, as a lower bound ("≥ 2100") when that run passed;
//   - when a step above it failed and a run of that step carried fewer
//     connections than it asked but at least the step that held, the
//     server refused the rest: that count is the Limit itself ("1014a",
//     with the failure's letter);
//   - when the failed step carried everything it asked (it broke later:
//     a stall, a thrashing server), the steps only bracket the break:
//     the Limit is the step that held, marked as an estimate ("~ 1500d",
//     Limit.Estimate, with the failed step in Limit.Below), as the Volano
//     Report printed its estimates.
//
// # Footnotes
//
// A failure that the server explained (results.Failure.Server: its own
// refusals and closes by reason from volanogo serve's metrics, or the
// last error lines of a server the client started) is footnoted with the
// server's cause first and the client's symptom after it ("Failed with
// "4 connections refused (max_connections)" at the server; the client
// saw "connection reset by peer" (...)."). A run that --retry made again
// is noted where it stands, its discarded runs included: "Failed on the
// first try with ...; made again on a fresh server, it worked on the
// second try."
//
// Each distinct failure cause (a failure kind, its example text and the
// server's account, their numbers aside: the user, room, ports and counts
// differ from run to run) gets one footnote, quoting the first run that
// had it, lettered a, b, c … in the order the tables first cite them. A failed run cites its first failure (the earliest, else the most
// frequent kind); for "open_files" the client's open-files limit is added
// to the example when the document knows it.
//
// # Paced capacity and latency
//
// Paced (open-loop) steps are tabulated as a game-server vendor publishes a
// capacity test: per step the concurrent users, messages in and out per
// second and the server's CPU % (medians over the counted runs), the p99 of
// delivery latency from the scheduled send (merged histograms), and whether
// the step broke (a counted run failed, was interrupted or had
// Paced.Broken) with its reason. The latency table merges the delivery
// histograms of the passed counted runs of every turn-taking cell (all
// counted runs of a paced one). The HTML draws one capacity chart per
// platform with two paced steps or more: messages in and out per second
// (log scale), server CPU and p99 latency (log scale, with the SLO) in
// three panels over the concurrent users, the first broken step marked.
//
// # What does a message cost?
//
// For every turn-taking and paced main cell the cost table gives the
// medians, over the passed counted runs that have the figure, of the
// server's and the client's CPU per message (Server and Client
// CPUPerMessageMicros, when above 0), of the delayed ACKs per message
// (TCP.DelayedACKs / Counts.Total) and of the percentage of TCP segments
// retransmitted (100 × TCP.Retransmitted / TCP.SegmentsOut). The TCP
// counters are the whole client machine's, so with client and server on
// one machine they count both sides. A figure no run has is "–"; a cell
// with none of the four has no row.
//
// # Which engine?
//
// When the platforms' documents have two engine pairs or more, the engine
// table gives, at each turn-taking connection count, each platform that
// recorded its engines: the server's and the client's engine, the
// platform's score (its main cell), and the medians over the passed
// counted runs of the messages per second (Throughput), of both CPUs per
// message, of their efficiency to the floor (as in the cost table) and of
// the server's memory per connection (results.Document.
// ServerMemoryPerConnection). The platform is a column only when two rows
// of one count have the same engines.
//
// # Churn
//
// Churn steps (Config.Scenario "churn"; the step is rooms × users) are
// tabulated per platform: the sequences and sequences per second (medians
// over the counted runs), the p50 and p99 of a user's first (cold)
// sequence (Churn.First) and of the later (warm) ones
// (Latency["sequence"]), each merged over the counted runs, failed ones
// included, and the ratio of the two p50s, as the RSVP measurements of
// the seeds compared a first execution with the next. Leaks are the most
// any run of the step left behind, the discarded run included: a leak is a
// leak whenever it happens. A leak figure is unknown when the run has no
// server figures (Server nil), and so are the goroutines when the server
// reported none after the run (Server.Goroutines 0, no leak recorded), the
// descriptors likewise (Server.OpenFDs); the connections are known when
// the server reported any after-run figure (a count of 0 open connections
// cannot be told from an absent one). A step fails under the run rule as
// a cell does, and cites the failures of its runs.
//
// # Fan-out
//
// Beside delivery latency the latency table merges, the same way, the
// fan-out histograms of a broadcast (results.LatencyFanoutFirst, Last and
// Spread): from the send of a chat to its first and to its last receiver,
// and the time between the two. Text and markdown print their p50 and p99
// in a table of their own; the HTML latency chart draws each platform's
// fan-out to the last receiver, dashed, beside its delivery latency.
//
// # Notes that are no failure
//
// A server that relays a room's chats from several threads (the original
// Java server) delivers some of them out of the room's order. Unless the
// run asked for strict order (then it failed, and is cited as a failure),
// the reordering of a row's counted turn-taking runs is one footnote of
// that row, cited by its cells: the chats reordered, the share of
// receivers that saw any, the largest displacement. The warnings a run
// recorded (results.Document.Warnings: the server's metrics could not be
// read, say) are footnotes too, cited by the cells whose counted runs
// have them; warnings that differ only after their first ": " share one.
// Loss, duplication and corruption fail a run and are cited as failures.
//
// # Reconnect storm
//
// Storm runs (Config.Scenario "storm") are tabulated per platform and
// step (concurrent users): the dropped, reconnected and recovered users
// and the connection attempts (medians of the counted runs), the median
// time to recovery of the runs in which everyone recovered and how many
// runs some never did, the reconnect time merged from the histograms, the
// most chats any counted run lost, the missed sends, and the leaks as for
// churn. A storm step is not a capacity step.
//
// # Find limit
//
// The runs of a load --find-limit search (results.Document.Search) are
// tabulated per platform in the order the search tried their steps:
// rooms, step, the most connections a run carried, the p99 of delivery
// latency, and whether the step held (its cell did not fail, no paced
// run broke, no counted run's p99 passed the search's SLO), with the
// largest step that held and the smallest that broke above it.
//
// # Server pauses
//
// Where the server's metrics expose its GC pauses
// (results.ServerUsage.GCPauses), the latency table's rows carry them:
// the median pauses per run, the largest p99 and the longest pause of
// the counted runs (upper bounds of histogram buckets), printed in a
// table of their own beside the delivery p99.
//
// # Environments
//
// Each platform's environment is its client machine, and when the server
// said its own (results.ServerInfo.Environment) the server's beside it,
// facet by facet; the server's identities, the network paths measured
// before the runs (results.Network: round trip, interface, link speed),
// the transports, engines, tools and command lines.
//
// # Processor scalability
//
// When the runs of a row at one step differ by the server's processor
// count, the processor table shows the score at each count and the gain of
// each added processor, as JavaWorld printed it in 1998 ("1648 (83%)" after
// 902 on one processor): the gain at n processors is
//
//	gain(n) = score(n) / score(m) − 1
//
// where m is the next lower count measured. When counts are not adjacent
// (1, then 4) the gain is spread evenly over the added processors:
// (score(n)/score(m))^(1/(n−m)) − 1, the compound gain per processor.
//
// # Client-bound runs
//
// A score measures the server only while the client keeps up. A run is
// client-bound when the client was measured to be the limit:
//
//   - the client's CPU over the timed phase reached 90% of the processors
//     it could use ((user+system)/elapsed ≥ 0.9 × Environment.GOMAXPROCS,
//     or × Environment.CPUs when GOMAXPROCS is unknown or not below it),
//   - and the server's did not reach 90% of its own (Server.CPUPercent
//     against its processors: Config.ServerCPUs, Server.GOMAXPROCS or
//     Server.CPUs), when the document has the server's CPU,
//   - and, when both ran on one machine (the client started the server, or
//     reached it on loopback), the two together left more than a tenth of
//     the machine idle: a full machine shared by both is the limit of both,
//     and the score is read with both sides' CPU per message.
//
// CPU per message alone never marks a run: a client that costs more per
// message than the server on a shared machine is a share, not a limit.
// A cell is client-bound when more than half of its counted runs are; it
// is marked with "*" and a note explains the mark.
//
// # Compare
//
// Options.Compare names two rows. For every step both have, every metric
// (score, delivery latency p50 and p99, server and client CPU per message;
// for churn steps sequences per second and the cold and warm p50)
// is summarised by its median over the runs after the discard, and the two
// samples are compared with the Mann–Whitney U test (golang.org/x/perf
// benchmath, AssumeNothing, alpha 0.05), as benchstat does. The delta is
// "~" when the difference is not significant. With n1 and n2 runs the
// smallest possible p-value is 2 / C(n1+n2, n1) (every run of one side
// above every run of the other): 0.1 with three runs a side, so at least
// four runs a side are needed to see a significant difference; a row with
// too few is Powerless and the table's warnings say so, with the figures.
//
// Options.Threshold makes the comparison a gate: a row in which B (new)
// is significantly worse than A (old) by more than Threshold percent is a
// Regression, and the verdict under the table lists them (`volanogo
// report --threshold` exits 3 then).
package report
