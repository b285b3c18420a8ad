// One Aeron Archive for `latency-probe stages`: an ArchivingMediaDriver (Java media driver and
// archive in one process) that records one stream, or replicates another archive's recording of
// it live. Run by latency-probe as
//   java -cp aeron-all.jar ArchiveStage.java --aeron-dir D --archive-dir A --control-port P
//        --replication-port R --sync N --channel C --stream S --term-length T --archive-id I
//        [--replicate-from PORT]
// It prints `READY` once the archive is up. Archive A then waits for the stream's first
// subscriber (latency-sub), starts recording it and prints `RECORDING <id> <start position>`;
// archive B (with --replicate-from) waits for the source archive's recording, replicates it
// live and prints `REPLICATING <source id> <replication id> <start position>`. It runs until its standard input closes
// (latency-probe holds the other end: if latency-probe dies, this exits too) or it is killed.
// Progress goes to stderr; a failure to start is one line on stderr starting with `ArchiveStage:`
// and exit 1. An error of the running archive (a full disk: `java.io.IOException - No space left
// on device`) is one line on stdout starting with `ArchiveStage: ERROR `, at once; archive A then
// stops its recording, so the stream's publisher is not held back by a recorder that cannot
// write.
import io.aeron.Aeron;
import io.aeron.archive.Archive;
import io.aeron.archive.ArchiveThreadingMode;
import io.aeron.archive.ArchivingMediaDriver;
import io.aeron.archive.client.AeronArchive;
import io.aeron.archive.codecs.SourceLocation;
import io.aeron.driver.MediaDriver;
import io.aeron.driver.ThreadingMode;
import io.aeron.exceptions.AeronException;
import java.io.File;
import java.util.HashMap;
import java.util.Map;
import org.agrona.concurrent.BackoffIdleStrategy;

public final class ArchiveStage
{
    /** Set when latency-probe closes our standard input: time to stop. */
    static volatile boolean stop = false;

    /** Set when the archive reported an error (it is on stdout already). */
    static volatile boolean failed = false;

    static synchronized void error(final String what)
    {
        if (stop)
        {
            // Stopping (latency-probe closed our stdin): what the shutdown raises is not the run's.
            System.err.println("ArchiveStage: while stopping: " + what);
            return;
        }
        System.out.println("ArchiveStage: ERROR " + what.replace('\n', ' '));
        System.out.flush();
        failed = true;
    }

    public static void main(final String[] args)
    {
        // An agent thread that dies (it should not) is said too, not only printed to stderr.
        Thread.setDefaultUncaughtExceptionHandler((t, e) ->
        {
            e.printStackTrace();
            error("thread " + t.getName() + " died: " + e);
        });
        final Thread stdin = new Thread(() ->
        {
            try
            {
                while (System.in.read() != -1)
                {
                    // Runs until latency-probe closes our standard input.
                }
            }
            catch (final java.io.IOException ignored)
            {
            }
            stop = true;
        });
        stdin.setDaemon(true);
        stdin.start();
        try
        {
            run(parse(args));
        }
        catch (final Throwable t)
        {
            System.err.println("ArchiveStage: " + t);
            System.exit(1);
        }
    }

    static Map<String, String> parse(final String[] args)
    {
        final Map<String, String> m = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2)
        {
            m.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        for (final String k : new String[]{
            "aeron-dir", "archive-dir", "control-port", "replication-port", "sync", "channel", "stream",
            "term-length", "archive-id"})
        {
            if (!m.containsKey(k))
            {
                throw new IllegalArgumentException("missing --" + k);
            }
        }
        return m;
    }

    static String udp(final String port)
    {
        return "aeron:udp?endpoint=127.0.0.1:" + port;
    }

    static void run(final Map<String, String> a) throws Exception
    {
        final int sync = Integer.parseInt(a.get("sync"));
        final int stream = Integer.parseInt(a.get("stream"));
        final String channel = a.get("channel");
        // The driver and the archive idle with backoff (they share two cores with spinning hot
        // threads): spinning here would take a hot thread's core.
        final MediaDriver.Context driver = new MediaDriver.Context()
            .aeronDirectoryName(a.get("aeron-dir"))
            .threadingMode(ThreadingMode.SHARED)
            .sharedIdleStrategy(new BackoffIdleStrategy(10, 20, 1_000, 100_000))
            .ipcTermBufferLength(Integer.parseInt(a.get("term-length")))
            .termBufferSparseFile(false)
            .dirDeleteOnStart(true)
            .dirDeleteOnShutdown(true)
            .spiesSimulateConnection(true);
        final Archive.Context archive = new Archive.Context()
            .aeronDirectoryName(a.get("aeron-dir"))
            .archiveDir(new File(a.get("archive-dir")))
            .deleteArchiveOnStart(true)
            .archiveId(Long.parseLong(a.get("archive-id")))
            .controlChannel(udp(a.get("control-port")))
            .replicationChannel(udp(a.get("replication-port")))
            .localControlChannel("aeron:ipc?term-length=64k")
            .recordingEventsEnabled(false)
            .threadingMode(ArchiveThreadingMode.SHARED)
            .idleStrategySupplier(() -> new BackoffIdleStrategy(10, 20, 1_000, 100_000))
            .fileSyncLevel(sync)
            .catalogFileSyncLevel(sync)
            // The mark file holds the archive's error log: kept in the driver's directory (shared
            // memory), off the archive's disk, so a full disk does not fault the thread writing
            // the error (it did: the error was lost and the conductor died).
            .markFileDir(new File(a.get("aeron-dir")))
            .errorHandler(t ->
            {
                if (t instanceof AeronException && ((AeronException)t).category() == AeronException.Category.WARN)
                {
                    System.err.println("ArchiveStage: warning: " + t);
                }
                else
                {
                    error(t.toString());
                }
            });
        try (ArchivingMediaDriver ignored = ArchivingMediaDriver.launch(driver, archive);
            AeronArchive client = AeronArchive.connect(new AeronArchive.Context()
                .aeronDirectoryName(a.get("aeron-dir"))
                .controlRequestChannel("aeron:ipc?term-length=64k")
                .controlResponseChannel("aeron:ipc?term-length=64k")))
        {
            System.out.println("READY");
            System.out.flush();
            if (!a.containsKey("replicate-from"))
            {
                // Record once the stream's first subscriber (latency-sub) is there: recording
                // from the start would let the publisher see a subscriber (the archive) and
                // send before latency-sub joined. The recording starts at the stream position
                // it joins at, which is where its stage times start counting.
                awaitSubscriber(aeron(client), stream);
                client.startRecording(channel, stream, SourceLocation.LOCAL);
                final long id = awaitRecording(client, channel, stream);
                // Where the recording starts: messages before it are not in it.
                System.out.println("RECORDING " + id + " " + client.getStartPosition(id));
                System.out.flush();
            }
            else
            {
                final String source = udp(a.get("replicate-from"));
                System.err.println("ArchiveStage: connecting to the source archive at " + source);
                try (AeronArchive src = AeronArchive.connect(new AeronArchive.Context()
                    .aeronDirectoryName(a.get("aeron-dir"))
                    .controlRequestChannel(source)
                    .controlResponseChannel("aeron:udp?endpoint=127.0.0.1:0")))
                {
                    System.err.println("ArchiveStage: connected; waiting for its recording of " + channel);
                    final long srcId = awaitRecording(src, channel, stream);
                    System.err.println("ArchiveStage: source recording " + srcId + "; replicating");
                    final long id = client.replicate(
                        srcId, Aeron.NULL_VALUE, AeronArchive.Configuration.controlStreamId(), source, null);
                    System.out.println("REPLICATING " + srcId + " " + id + " " + src.getStartPosition(srcId));
                    System.out.flush();
                }
            }
            boolean released = false;
            while (!stop)
            {
                if (failed && !released && !a.containsKey("replicate-from"))
                {
                    // A recorder that cannot write would hold the stream's publisher back for
                    // good: stop recording, the error is said.
                    released = true;
                    try
                    {
                        client.stopRecording(channel, stream);
                    }
                    catch (final Exception ex)
                    {
                        System.err.println("ArchiveStage: stopRecording failed: " + ex);
                    }
                }
                Thread.sleep(20);
            }
        }
    }

    static Aeron aeron(final AeronArchive client)
    {
        return client.context().aeron();
    }

    /** Waits for a subscriber position counter (type 4) of the stream, other than the archive's. */
    static void awaitSubscriber(final Aeron aeron, final int stream) throws InterruptedException
    {
        while (!stop)
        {
            final boolean[] found = {false};
            aeron.countersReader().forEach((id, typeId, key, label) ->
            {
                if (typeId == 4 && key.getInt(12) == stream)
                {
                    found[0] = true;
                }
            });
            if (found[0])
            {
                return;
            }
            Thread.sleep(1);
        }
    }

    /** The last recording of the stream on that archive, waiting up to 60 s for it to start. */
    static long awaitRecording(final AeronArchive client, final String channel, final int stream)
        throws InterruptedException
    {
        final long deadline = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < deadline && !stop)
        {
            final long[] last = {Aeron.NULL_VALUE};
            client.listRecordingsForUri(0, Integer.MAX_VALUE, channel, stream,
                (controlSessionId, correlationId, recordingId, startTimestamp, stopTimestamp, startPosition,
                stopPosition, initialTermId, segmentFileLength, termBufferLength, mtuLength, sessionId,
                streamId, strippedChannel, originalChannel, sourceIdentity) -> last[0] = recordingId);
            if (last[0] != Aeron.NULL_VALUE)
            {
                return last[0];
            }
            Thread.sleep(5);
        }
        throw new IllegalStateException("no recording of " + channel + " stream " + stream + " within 60 s");
    }
}
