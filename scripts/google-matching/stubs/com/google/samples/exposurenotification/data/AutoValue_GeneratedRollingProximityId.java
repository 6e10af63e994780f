package com.google.samples.exposurenotification.data;

/** What AutoValue would generate for Google's GeneratedRollingProximityId: its two values. */
final class AutoValue_GeneratedRollingProximityId extends GeneratedRollingProximityId {
    private final RollingProximityId rollingProximityId;
    private final int intervalNumber;

    AutoValue_GeneratedRollingProximityId(RollingProximityId rollingProximityId, int intervalNumber) {
        this.rollingProximityId = rollingProximityId;
        this.intervalNumber = intervalNumber;
    }

    @Override public RollingProximityId rollingProximityId() { return rollingProximityId; }
    @Override public int intervalNumber() { return intervalNumber; }
}
