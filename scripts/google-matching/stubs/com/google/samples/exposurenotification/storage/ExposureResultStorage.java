package com.google.samples.exposurenotification.storage;

import android.content.Context;
import com.google.samples.Hex;
import com.google.samples.exposurenotification.nearby.TemporaryExposureKey;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Replaces Google's in-memory stand-in for its LevelDB result store, which keys a HashMap by byte[]
 * (identity) and is new at each open. Same interface as far as matching uses it; the results of
 * one token, by key data, kept until {@link #clear()} so that the harness can read them.
 */
public class ExposureResultStorage implements AutoCloseable {
    private static final Map<String, ExposureResult> RESULTS = new LinkedHashMap<>();
    private final Map<String, ExposureResult> transaction = new LinkedHashMap<>();

    /** Forgets every result (between scenarios). */
    public static void clear() {
        RESULTS.clear();
    }

    /** The stored results by key data (lower-case hex), in the order they were first stored. */
    public static Map<String, ExposureResult> results() {
        return RESULTS;
    }

    public static ExposureResultStorage open(Context context) {
        return new ExposureResultStorage();
    }

    public static byte[] encodeTokenRoot(String packageName, byte[] signatureHash, String token) {
        return (packageName + ":" + Hex.bytesToStringLowercase(signatureHash) + ":" + token)
                .getBytes(StandardCharsets.UTF_8);
    }

    public boolean hasResult(byte[] tokenRoot, byte[] exposureKey) {
        String key = Hex.bytesToStringLowercase(exposureKey);
        return transaction.containsKey(key) || RESULTS.containsKey(key);
    }

    public ExposureResult getResult(byte[] tokenRoot, byte[] exposureKey) {
        ExposureResult result = RESULTS.get(Hex.bytesToStringLowercase(exposureKey));
        return result == null ? ExposureResult.getDefaultInstance() : result;
    }

    public boolean storeResult(
            byte[] tokenRoot,
            TemporaryExposureKey exposureKey,
            ExposureResult exposureResult,
            boolean holdForTransaction) {
        String key = Hex.bytesToStringLowercase(exposureKey.getKeyData());
        (holdForTransaction ? transaction : RESULTS).put(key, exposureResult);
        return true;
    }

    public void commitStoreResultRequestsForTransaction() {
        RESULTS.putAll(transaction);
        transaction.clear();
    }

    public List<ExposureResult> getAll(String packageName, byte[] signatureHash, String token)
            throws StorageException {
        return new ArrayList<>(RESULTS.values());
    }

    @Override
    public void close() {}
}
