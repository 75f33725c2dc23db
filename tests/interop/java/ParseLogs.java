import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.record.ControlRecordType;
import org.apache.kafka.common.record.ControlRecordUtils;
import org.apache.kafka.common.record.EndTransactionMarker;
import org.apache.kafka.common.record.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.FileRecords;
import org.apache.kafka.common.record.Record;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.utils.ByteUtils;

/**
 * Kafka's own parser over files pykraft wrote: every argument is a log segment (.log) or a snapshot (.checkpoint).
 * Each batch goes through FileRecords and ensureValid (magic, CRC-32C), each record is read (decompressing as
 * Kafka's consumer and raft client do), control records are decoded by ControlRecordUtils at the version Kafka
 * reads them, as KafkaRaftClient's RecordsIterator does (an unknown control type fails there, so it fails here),
 * and metadata records' frame headers (frame version, api key, version) are checked as MetadataRecordSerde reads
 * them. One check line per file.
 */
public final class ParseLogs {
    public static void main(String[] args) {
        boolean metadata = false;
        for (String arg : args) {
            if (arg.equals("--metadata")) {
                metadata = true;
                continue;
            }
            final boolean isMetadata = metadata;
            Checks.check(arg, () -> parse(new File(arg), isMetadata));
        }
    }

    private static Map<String, Object> parse(File file, boolean metadata) throws Exception {
        Map<String, Object> detail = new LinkedHashMap<>();
        Map<String, Integer> control = new TreeMap<>();
        List<String> order = new ArrayList<>();
        long batches = 0;
        long records = 0;
        long expectedNext = -1;
        try (FileRecords fileRecords = FileRecords.open(file, false)) {
            for (FileChannelRecordBatch batch : fileRecords.batches()) {
                batch.ensureValid();
                Checks.require(batch.magic() == RecordBatch.MAGIC_VALUE_V2, "magic " + batch.magic() + " at " + batch.baseOffset());
                Checks.require(expectedNext < 0 || batch.baseOffset() >= expectedNext,
                        "batch at " + batch.baseOffset() + " after one ending at " + (expectedNext - 1));
                expectedNext = batch.lastOffset() + 1;
                batches++;
                long previous = -1;
                for (Record record : batch) {
                    record.ensureValid();
                    Checks.require(record.offset() > previous && record.offset() <= batch.lastOffset(),
                            "record offset " + record.offset() + " outside its batch " + batch.baseOffset() + "-" + batch.lastOffset());
                    previous = record.offset();
                    records++;
                    if (batch.isControlBatch()) {
                        String type = decodeControl(record);
                        control.merge(type, 1, Integer::sum);
                        order.add(type);
                    } else if (metadata) {
                        checkMetadataFrame(record);
                    }
                }
            }
        }
        if (file.getName().endsWith(".checkpoint")) {
            Checks.require(!order.isEmpty() && order.get(0).equals("SNAPSHOT_HEADER"), "a snapshot starts with its header: " + order);
            Checks.require(order.get(order.size() - 1).equals("SNAPSHOT_FOOTER"), "a snapshot ends with its footer: " + order);
        }
        detail.put("batches", batches);
        detail.put("records", records);
        detail.put("control", control);
        return detail;
    }

    private static String decodeControl(Record record) {
        ControlRecordType type = ControlRecordType.parse(record.key());
        switch (type) {
            case LEADER_CHANGE:
                ControlRecordUtils.deserializeLeaderChangeMessage(record);
                break;
            case SNAPSHOT_HEADER:
                ControlRecordUtils.deserializeSnapshotHeaderRecord(record);
                break;
            case SNAPSHOT_FOOTER:
                ControlRecordUtils.deserializeSnapshotFooterRecord(record);
                break;
            case KRAFT_VERSION:
                ControlRecordUtils.deserializeKRaftVersionRecord(record);
                break;
            case KRAFT_VOTERS:
                ControlRecordUtils.deserializeVotersRecord(record);
                break;
            case ABORT:
            case COMMIT:
                EndTransactionMarker.deserialize(record);
                break;
            default:
                throw new IllegalStateException("unknown control record type " + type + " at offset " + record.offset());
        }
        return type.name();
    }

    private static void checkMetadataFrame(Record record) {
        Checks.require(record.hasValue(), "metadata record without a value at " + record.offset());
        ByteBuffer value = record.value();
        int frameVersion = ByteUtils.readUnsignedVarint(value);
        int apiKey = ByteUtils.readUnsignedVarint(value);
        int version = ByteUtils.readUnsignedVarint(value);
        Checks.require(frameVersion == 1, "frame version " + frameVersion + " at " + record.offset());
        Checks.require(apiKey >= 0 && apiKey < 64 && version >= 0 && version < 32,
                "api key " + apiKey + " version " + version + " at " + record.offset());
    }
}
