// kolorun's elastic jobs (--min-np, --max-np, --host-discovery-script), as horovodrun's
// elastic driver runs them, over Gloo (MPI cannot re-form: docs/elastic.md).
//
// The job runs in rounds. kolorun starts the workers of the first round and gives each its
// rank through the rendezvous (rendezvous/server.h). A round ends when a worker fails (its
// process exits non-zero: its host is blacklisted, for --blacklist-cooldown-range or for
// good) or when the workers, told at a commit that the hosts changed, reset themselves.
// Every surviving worker then asks for its place in the next round; kolorun waits for them
// (at most --elastic-timeout: a worker that does not ask by then is killed and its host
// blacklisted), adds workers on every free slot (up to --max-np, if given), and forms the
// next round: the longest-serving worker becomes rank 0, so that the state it broadcasts is
// the newest. The first round waits for -np usable slots, the others for --min-np (by
// default -np), at most --elastic-timeout each. More than --reset-limit re-formings, a round
// in which every worker failed, or one whose hosts are all blacklisted for good, end the
// job. Workers on a host that is gone are told so and leave. Each worker is told its place
// in the round it starts in as horovodrun tells it (HOROVOD_RANK and the rest).
//
// Once a worker of the round exits 0, the program has finished, as horovodrun's driver
// takes it: no other round forms, workers that ask for one are told to leave, and the job
// ends when the round's other workers have ended, however long their own code runs (status
// 0, or 1 if one of them failed); otherwise it ends with a line that says why it cannot go
// on.
#pragma once

#include <string>
#include <vector>

#include "command.h"
#include "hosts.h"
#include "options.h"

namespace kolo::launcher {

// The hosts a discovery script printed: "host" or "host:slots" per line ('#' comments and
// blank lines skipped); a host without slots has `default_slots`. Throws kolo::Error
// (InvalidArgument) naming the bad line.
std::vector<HostSlots> parse_discovered_hosts(const std::string& text, int default_slots);

// horovodrun's blacklist cooldown (--blacklist-cooldown-range MIN MAX) for a host's n-th
// failure (n >= 1): MIN * 2^n plus `fraction` (drawn from [0, 1)) of MIN seconds, within
// [MIN, MAX]: the first lasts 2-3 MIN, each next about twice as long.
double cooldown_seconds(double low, double high, int n, double fraction);

int run_elastic_job(const LaunchOptions& options, const std::vector<HostSlots>& hosts, const LaunchContext& context);

}  // namespace kolo::launcher
