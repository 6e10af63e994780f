package com.google.samples.exposurenotification.matching;

import com.google.samples.exposurenotification.data.BluetoothMetadata;
import com.google.samples.exposurenotification.storage.SightingRecord;

/** What AutoValue would generate for Google's SightingRecordWithMetadata: its two values. */
final class AutoValue_SightingRecordWithMetadata extends SightingRecordWithMetadata {
    private final SightingRecord sightingRecord;
    private final BluetoothMetadata metadata;

    AutoValue_SightingRecordWithMetadata(SightingRecord sightingRecord, BluetoothMetadata metadata) {
        this.sightingRecord = sightingRecord;
        this.metadata = metadata;
    }

    @Override SightingRecord sightingRecord() { return sightingRecord; }
    @Override BluetoothMetadata metadata() { return metadata; }
}
