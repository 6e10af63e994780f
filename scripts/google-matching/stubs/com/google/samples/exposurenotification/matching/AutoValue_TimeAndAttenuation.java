package com.google.samples.exposurenotification.matching;

/** What AutoValue would generate for Google's TimeAndAttenuation: its two values. */
final class AutoValue_TimeAndAttenuation extends TimeAndAttenuation {
    private final Integer time;
    private final Integer attenuation;

    AutoValue_TimeAndAttenuation(Integer time, Integer attenuation) {
        this.time = time;
        this.attenuation = attenuation;
    }

    @Override Integer time() { return time; }
    @Override Integer attenuation() { return attenuation; }
}
