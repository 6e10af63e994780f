package com.google.samples.exposurenotification.storage;

import android.content.Context;
import com.google.samples.exposurenotification.data.DayNumber;
import com.google.samples.exposurenotification.data.RollingProximityId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Replaces Google's in-memory stand-in for its LevelDB sighting store, which keys a HashMap by
 * byte[] (identity) and so never finds a record. Same interface as far as matching uses it: the
 * sightings of one RPI on one UTC day (DayNumber), in the order they were stored.
 */
public class ContactRecordDataStore implements AutoCloseable {
    private static final Map<String, ContactRecordValue.Builder> RECORDS = new HashMap<>();

    /** Forgets every sighting (between scenarios). */
    public static void clear() {
        RECORDS.clear();
    }

    /** Stores a sighting under its RPI and the day of its time, as Google's appendSightingRecord does. */
    public static void add(RollingProximityId rpi, SightingRecord sighting) {
        DayNumber day = new DayNumber(new org.joda.time.Instant(sighting.getEpochSeconds() * 1000L));
        RECORDS.computeIfAbsent(key(day, rpi), unused -> ContactRecordValue.newBuilder())
                .addSightingRecords(sighting);
    }

    private static String key(DayNumber day, RollingProximityId rpi) {
        return day.getValue() + ":" + com.google.samples.Hex.bytesToStringLowercase(rpi.getDirect());
    }

    public static ContactRecordDataStore open(Context context) {
        return new ContactRecordDataStore();
    }

    public ContactRecord getRecord(DayNumber dayNumber, RollingProximityId rollingProximityId) {
        ContactRecordValue.Builder value = RECORDS.get(key(dayNumber, rollingProximityId));
        return value == null ? null : new ContactRecord(value.build());
    }

    public List<byte[]> getAllRawIds() {
        List<byte[]> ids = new ArrayList<>();
        for (String key : RECORDS.keySet()) {
            ids.add(com.google.samples.Hex.stringToBytes(key.substring(key.indexOf(':') + 1)));
        }
        return ids;
    }

    @Override
    public void close() {}

    /** One RPI's sightings of one day. */
    public static class ContactRecord {
        private final ContactRecordValue value;

        ContactRecord(ContactRecordValue value) {
            this.value = value;
        }

        public ContactRecordValue getValue() {
            return value;
        }
    }
}
