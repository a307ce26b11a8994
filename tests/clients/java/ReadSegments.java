import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.Record;

/**
 * Reads a partition directory's segment files with Kafka's own reader ({@code FileRecords}, the
 * class Kafka's log uses), checks every batch's CRC ({@code ensureValid}) and decodes every
 * record. For the records below the high watermark it prints their count and a SHA-256 over their
 * offsets and values (each value as a 4-byte length then its bytes, -1 for null), so the caller can
 * compare with what a consumer read.
 *
 * <p>Args: (partitionDir highWatermark)... One JSON line per directory.
 */
public final class ReadSegments {
    private ReadSegments() {}

    public static void main(String[] args) throws IOException, NoSuchAlgorithmException {
        for (int i = 0; i + 1 < args.length; i += 2) {
            read(new File(args[i]), Long.parseLong(args[i + 1]));
        }
    }

    private static void read(File dir, long highWatermark) throws IOException, NoSuchAlgorithmException {
        File[] segments = dir.listFiles((d, name) -> name.endsWith(".log"));
        if (segments == null) {
            throw new IOException("not a directory: " + dir);
        }
        Arrays.sort(segments);
        MessageDigest digest = MessageDigest.getInstance("SHA-256");
        long batches = 0;
        long records = 0;
        long nextOffset = -1;
        for (File segment : segments) {
            try (FileRecords file = FileRecords.open(segment)) {
                for (FileChannelRecordBatch batch : file.batches()) {
                    batch.ensureValid();
                    if (batch.lastOffset() >= highWatermark) {
                        continue;
                    }
                    if (batch.baseOffset() < nextOffset) {
                        throw new IOException(segment + ": batch at " + batch.baseOffset() + " after offset " + nextOffset);
                    }
                    nextOffset = batch.lastOffset() + 1;
                    batches++;
                    for (Record record : batch) {
                        records++;
                        digest.update(ByteBuffer.allocate(8).putLong(record.offset()).array());
                        ByteBuffer value = record.value();
                        if (value == null) {
                            digest.update(ByteBuffer.allocate(4).putInt(-1).array());
                        } else {
                            digest.update(ByteBuffer.allocate(4).putInt(value.remaining()).array());
                            digest.update(value.duplicate());
                        }
                    }
                }
            }
        }
        Json.emit("dir", dir.getPath(), "segments", segments.length, "batches", batches, "records", records,
                "next_offset", nextOffset, "sha256", HexFormat.of().formatHex(digest.digest()));
    }
}
