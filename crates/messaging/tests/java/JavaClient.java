import io.aeron.Aeron;
import io.aeron.FragmentAssembler;
import io.aeron.Publication;
import io.aeron.Subscription;
import io.aeron.logbuffer.BufferClaim;
import io.aeron.logbuffer.FragmentHandler;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;

/**
 * Aeron's Java client (aeron-all) on the other side of messaging's Java conformance tests
 * (crates/messaging/tests/java_client.rs), run as a single-file program:
 *
 * <pre>
 * java -cp aeron-all.jar JavaClient.java read  DIR CHANNEL STREAM COUNT OUT
 * java -cp aeron-all.jar JavaClient.java write DIR CHANNEL STREAM exclusive|concurrent IN
 * </pre>
 *
 * A messages file holds, per message: its length (int32), its reserved value (int64), both
 * little-endian, then its bytes. {@code read} subscribes, says {@code subscribed} once a
 * publication is there, and hands each message its {@link FragmentAssembler} reassembles to the
 * file (with the header's reserved value) until it has COUNT or nothing came for 20 s. {@code write} publishes the file's messages in order, the
 * first 8 bytes of each being its sequence number: an even one that fits one frame through
 * {@code tryClaim} with the reserved value set on the claim, the others through {@code offer}
 * with a reserved value supplier. It says {@code connected} once a subscriber is there, starts
 * when its standard input says {@code go}, says {@code wrote N} and waits for its standard
 * input to close before it closes the publication (so that the readers have read everything).
 */
public final class JavaClient
{
    public static void main(final String[] args) throws Exception
    {
        final String mode = args[0];
        final Aeron.Context context = new Aeron.Context().aeronDirectoryName(args[1]);
        try (Aeron aeron = Aeron.connect(context))
        {
            final String channel = args[2];
            final int stream = Integer.parseInt(args[3]);
            if ("read".equals(mode))
            {
                read(aeron, channel, stream, Integer.parseInt(args[4]), args[5]);
            }
            else
            {
                write(aeron, channel, stream, "exclusive".equals(args[4]), args[5]);
            }
        }
    }

    static void read(final Aeron aeron, final String channel, final int stream, final int count, final String out)
        throws Exception
    {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final int[] got = {0};
        final FragmentHandler handler = new FragmentAssembler((buffer, offset, length, header) ->
        {
            final ByteBuffer record = ByteBuffer.allocate(12 + length).order(ByteOrder.LITTLE_ENDIAN);
            record.putInt(length).putLong(header.reservedValue());
            final byte[] message = new byte[length];
            buffer.getBytes(offset, message);
            record.put(message);
            bytes.write(record.array(), 0, record.capacity());
            got[0]++;
        });
        try (Subscription subscription = aeron.addSubscription(channel, stream))
        {
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!subscription.isConnected())
            {
                if (System.nanoTime() > deadline)
                {
                    throw new IllegalStateException("no publication connected within 20 s");
                }
                Thread.sleep(1);
            }
            System.out.println("subscribed");
            System.out.flush();
            final IdleStrategy idle = new BackoffIdleStrategy();
            long lastProgress = System.nanoTime();
            while (got[0] < count && System.nanoTime() - lastProgress < TimeUnit.SECONDS.toNanos(20))
            {
                final int n = subscription.poll(handler, 16);
                if (n > 0)
                {
                    lastProgress = System.nanoTime();
                }
                idle.idle(n);
            }
        }
        Files.write(Paths.get(out), bytes.toByteArray());
        System.out.println("read " + got[0]);
    }

    static void write(
        final Aeron aeron, final String channel, final int stream, final boolean exclusive, final String in)
        throws Exception
    {
        final ByteBuffer file = ByteBuffer.wrap(Files.readAllBytes(Paths.get(in))).order(ByteOrder.LITTLE_ENDIAN);
        try (Publication publication = exclusive ?
            aeron.addExclusivePublication(channel, stream) : aeron.addPublication(channel, stream))
        {
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!publication.isConnected())
            {
                if (System.nanoTime() > deadline)
                {
                    throw new IllegalStateException("no subscriber connected within 20 s");
                }
                Thread.sleep(1);
            }
            // Ready: the test starts every writer of the stream at once.
            System.out.println("connected");
            System.out.flush();
            final BufferedReader input = new BufferedReader(new InputStreamReader(System.in));
            if (!"go".equals(input.readLine()))
            {
                throw new IllegalStateException("the test did not say go");
            }
            final BufferClaim claim = new BufferClaim();
            final UnsafeBuffer buffer = new UnsafeBuffer(ByteBuffer.allocateDirect(publication.maxMessageLength()));
            final IdleStrategy idle = new BackoffIdleStrategy();
            int sent = 0;
            while (file.hasRemaining())
            {
                final int length = file.getInt();
                final long reserved = file.getLong();
                final byte[] message = new byte[length];
                file.get(message);
                final long seq = ByteBuffer.wrap(message).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
                while (true)
                {
                    final long result;
                    if (seq % 2 == 0 && length <= publication.maxPayloadLength())
                    {
                        result = publication.tryClaim(length, claim);
                        if (result > 0)
                        {
                            claim.buffer().putBytes(claim.offset(), message);
                            claim.reservedValue(reserved);
                            claim.commit();
                        }
                    }
                    else
                    {
                        buffer.putBytes(0, message);
                        result = publication.offer(buffer, 0, length, (termBuffer, termOffset, frameLength) -> reserved);
                    }
                    if (result > 0)
                    {
                        break;
                    }
                    if (result == Publication.CLOSED || result == Publication.MAX_POSITION_EXCEEDED)
                    {
                        throw new IllegalStateException("message " + seq + ": " + Publication.errorString(result));
                    }
                    idle.idle(0);
                }
                idle.reset();
                sent++;
            }
            System.out.println("wrote " + sent + " (session " + publication.sessionId() + ")");
            System.out.flush();
            while (input.readLine() != null)
            {
                // Until the test closes our standard input: it has read everything.
            }
        }
    }
}
