package com.google.samples.exposurenotification.matching;

/** What AutoValue would generate for Google's Period: its two values. */
final class AutoValue_Period extends Period {
    private final TimeAndAttenuation scan1;
    private final TimeAndAttenuation scan2;

    AutoValue_Period(TimeAndAttenuation scan1, TimeAndAttenuation scan2) {
        this.scan1 = scan1;
        this.scan2 = scan2;
    }

    @Override TimeAndAttenuation scan1() { return scan1; }
    @Override TimeAndAttenuation scan2() { return scan2; }
}
