package com.google.samples.exposurenotification.matching;

import com.google.common.collect.ImmutableList;
import com.google.samples.exposurenotification.nearby.ExposureConfiguration;
import com.google.samples.exposurenotification.nearby.TemporaryExposureKey;
import com.google.samples.exposurenotification.storage.CloseableIterable;
import java.util.Iterator;
import java.util.List;

/**
 * Replaces Google's MatchingRequest, which reads key files and a configuration protobuf: here
 * the keys and the configuration are given as they are. Only what the tracer asks of a request.
 */
public class MatchingRequest {
    private final List<TemporaryExposureKey> keys;
    private final ExposureConfiguration exposureConfiguration;

    public MatchingRequest(List<TemporaryExposureKey> keys, ExposureConfiguration exposureConfiguration) {
        this.keys = keys;
        this.exposureConfiguration = exposureConfiguration;
    }

    public CloseableIterable<TemporaryExposureKey> diagnosisKeys() {
        return new CloseableIterable<TemporaryExposureKey>() {
            @Override
            public Iterator<TemporaryExposureKey> iterator() {
                return keys.iterator();
            }

            @Override
            public void close() {}
        };
    }

    /** No files: the tracer's native path, the only one that reads them, is not run. */
    public ImmutableList<String> diagnosisKeyFiles() {
        return ImmutableList.of();
    }

    public String packageName() {
        return "org.enagent.google-matching";
    }

    public byte[] signatureHash() {
        return new byte[32];
    }

    /** TOKEN_A: the token under which Google's tracer also computes exposure windows (v2). */
    public String token() {
        return ExposureMatchingTracer.TOKEN_A;
    }

    public String keyFilesHash() {
        return "";
    }

    public ExposureConfiguration exposureConfiguration() {
        return exposureConfiguration;
    }
}
