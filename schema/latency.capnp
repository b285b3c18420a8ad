# The aeron-latency wire format: one `Sample` per Aeron message.
#
# Framing: the standard Cap'n Proto stream framing of a single-segment message (an 8-byte
# segment table, then the segment), unpacked, little-endian. The facade's `wire` module writes
# it straight into an Aeron claimed buffer and reads it back without allocating.
#
# Clocks: every `*Ns` field is CLOCK_MONOTONIC in nanoseconds, so publisher and subscriber must
# run on the same host (Aeron IPC). Differences between them are latencies; the absolute values
# mean nothing across reboots.
#
# Compact samples: a writer may send `Sample` with its first two data words only (seq and
# intendedNs, 32 bytes); the other fields then travel elsewhere (schema/README.md).
#
# Before changing anything here, read schema/README.md: ordinals are append-only, a field's type
# never changes, and the facade tests pin the layout of the fields below.

@0xb4201b8876981bed;

# What a message is for. The subscriber records only `measured` samples; `warmup` samples
# exercise the path (page faults, caches, branch predictors) and are discarded; `end` closes
# the run.
enum Kind {
  measured @0;  # recorded in the latency histogram
  warmup @1;    # sent before the measured ones and never recorded
  end @2;       # the last message of a run: no latency, `seq` carries the count sent
}

# One timestamped message.
struct Sample {
  # One sequence space per run: warm-up messages first (0 .. warmup-1), then the measured ones.
  # For `end`, seq is the number of messages sent before it (the next sequence), i.e. the count
  # sent; the subscriber compares it with the count received to report losses.
  seq @0 :UInt64;

  # When this message should have been sent, from the schedule: start + i * interval
  # (CLOCK_MONOTONIC ns). Latency measured from here includes any sender-side delay, so a
  # stalled publisher cannot hide its stall (no coordinated omission).
  intendedNs @1 :Int64;

  # CLOCK_MONOTONIC ns read just before the message was written into the Aeron buffer.
  sentNs @2 :Int64;

  # Which publisher sent it, so several publishers can share a stream.
  publisherId @3 :UInt32;

  # What the message is for; see `Kind`.
  kind @4 :Kind;

  # The number of warm-up messages in this run.
  warmup @5 :UInt32;

  # The number of measured messages planned after the warm-up (the subscriber splits them
  # into 20 equal groups); 0 means open-ended.
  planned @6 :UInt32;

  # Zero bytes whose only job is to set the message size. Readers ignore the contents.
  padding @7 :Data;
}
