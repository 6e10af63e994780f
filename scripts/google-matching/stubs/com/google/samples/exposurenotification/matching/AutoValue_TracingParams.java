package com.google.samples.exposurenotification.matching;

import org.joda.time.Duration;

/** What AutoValue would generate for Google's TracingParams and its builder. */
final class AutoValue_TracingParams extends TracingParams {
    private final Duration minExposureBucketizedDuration;
    private final int minimumAttenuationValue;
    private final Duration maxInterpolationDuration;
    private final Duration scanInterval;
    private final Boolean interpolationEnabled;

    private AutoValue_TracingParams(Builder builder) {
        this.minExposureBucketizedDuration = builder.minExposureBucketizedDuration;
        this.minimumAttenuationValue = builder.minimumAttenuationValue;
        this.maxInterpolationDuration = builder.maxInterpolationDuration;
        this.scanInterval = builder.scanInterval;
        this.interpolationEnabled = builder.interpolationEnabled;
    }

    @Override public Duration minExposureBucketizedDuration() { return minExposureBucketizedDuration; }
    @Override public int minimumAttenuationValue() { return minimumAttenuationValue; }
    @Override public Duration maxInterpolationDuration() { return maxInterpolationDuration; }
    @Override public Duration scanInterval() { return scanInterval; }
    @Override public Boolean interpolationEnabled() { return interpolationEnabled; }

    static final class Builder extends TracingParams.Builder {
        private Duration minExposureBucketizedDuration;
        private int minimumAttenuationValue;
        private Duration maxInterpolationDuration;
        private Duration scanInterval;
        private Boolean interpolationEnabled;

        @Override public TracingParams.Builder setMinExposureBucketizedDuration(Duration value) {
            minExposureBucketizedDuration = value;
            return this;
        }

        @Override public TracingParams.Builder setMinimumAttenuationValue(int value) {
            minimumAttenuationValue = value;
            return this;
        }

        @Override public TracingParams.Builder setMaxInterpolationDuration(Duration value) {
            maxInterpolationDuration = value;
            return this;
        }

        @Override public TracingParams.Builder setScanInterval(Duration value) {
            scanInterval = value;
            return this;
        }

        @Override public TracingParams.Builder setInterpolationEnabled(boolean value) {
            interpolationEnabled = value;
            return this;
        }

        @Override public TracingParams autoBuild() {
            return new AutoValue_TracingParams(this);
        }
    }
}
