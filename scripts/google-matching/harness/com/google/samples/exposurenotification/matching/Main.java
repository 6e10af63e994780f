package com.google.samples.exposurenotification.matching;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.protobuf.ByteString;
import com.google.samples.Clock;
import com.google.samples.Hex;
import com.google.samples.exposurenotification.ExposureKeyExportProto;
import com.google.samples.exposurenotification.ExposureNotificationEnums;
import com.google.samples.exposurenotification.crypto.AesEcbEncryptor;
import com.google.samples.exposurenotification.data.BluetoothMetadata;
import com.google.samples.exposurenotification.data.GeneratedRollingProximityId;
import com.google.samples.exposurenotification.data.RollingProximityId;
import com.google.samples.exposurenotification.data.generator.AssociatedEncryptedMetadataGenerator;
import com.google.samples.exposurenotification.data.generator.RollingProximityIdGenerator;
import com.google.samples.exposurenotification.features.ContactTracingFeature;
import com.google.samples.exposurenotification.nearby.DailySummariesConfig;
import com.google.samples.exposurenotification.nearby.DailySummary;
import com.google.samples.exposurenotification.nearby.DiagnosisKeysDataMapping;
import com.google.samples.exposurenotification.nearby.ExposureConfiguration;
import com.google.samples.exposurenotification.nearby.TemporaryExposureKey;
import com.google.samples.exposurenotification.storage.ContactRecordDataStore;
import com.google.samples.exposurenotification.storage.ExposureRecord;
import com.google.samples.exposurenotification.storage.ExposureResult;
import com.google.samples.exposurenotification.storage.ExposureResultStorage;
import com.google.samples.exposurenotification.storage.ExposureWindowProto;
import com.google.samples.exposurenotification.storage.ScanInstanceProto;
import com.google.samples.exposurenotification.storage.SightingRecord;
import com.google.samples.exposurenotification.storage.TekMetadataRecord;
import java.io.Reader;
import java.io.Writer;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs Google's matching (ExposureMatchingTracer.traceWithJava, KeyExposureEvaluator,
 * DailySummaryUtils) on scenarios and writes what it found.
 *
 * <p>Usage: Main SCENARIOS.json OUT.json GOOGLE_COMMIT. The input is {"now": unix seconds, "scenarios": [...]}
 * as scripts/google-matching/scenarios.py writes it; the output is the same scenarios, each with
 * its sightings' RPI and AEM (derived with Google's generators) and "expected": Google's windows,
 * daily summaries and v1 exposure results.
 *
 * <p>"now" must be today: DailySummaryUtils reads the system clock for daysSinceExposureThreshold.
 */
public final class Main {
    private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().create();

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            throw new IllegalArgumentException("usage: Main SCENARIOS.json OUT.json GOOGLE_COMMIT");
        }
        JsonObject input;
        try (Reader reader = Files.newBufferedReader(Path.of(args[0]))) {
            input = GSON.fromJson(reader, JsonObject.class);
        }
        long now = input.get("now").getAsLong();
        requireToday(now);
        List<JsonObject> results = new ArrayList<>();
        for (JsonElement scenario : input.getAsJsonArray("scenarios")) {
            results.add(run(scenario.getAsJsonObject(), now));
        }
        requireToday(now);
        // One scenario a line, so that a regeneration's diff shows which scenarios changed.
        try (Writer writer = Files.newBufferedWriter(Path.of(args[1]), StandardCharsets.UTF_8)) {
            writer.write("{\"googleCommit\": " + GSON.toJson(args[2]));
            writer.write(", \"seed\": " + input.get("seed") + ", \"now\": " + now + ", \"scenarios\": [\n");
            for (int i = 0; i < results.size(); i++) {
                writer.write(GSON.toJson(results.get(i)));
                writer.write(i + 1 < results.size() ? ",\n" : "\n");
            }
            writer.write("]}\n");
        }
    }

    private static void requireToday(long now) {
        long today = TimeUnit.MILLISECONDS.toDays(System.currentTimeMillis());
        if (TimeUnit.SECONDS.toDays(now) != today) {
            throw new IllegalStateException(
                    "now (" + now + ") is not today (UTC day " + today + "): DailySummaryUtils counts"
                            + " daysSinceExposureThreshold from the system clock");
        }
    }

    private static JsonObject run(JsonObject scenario, long now) throws Exception {
        ContactRecordDataStore.clear();
        ExposureResultStorage.clear();

        List<TemporaryExposureKey> keys = new ArrayList<>();
        for (JsonElement key : scenario.getAsJsonArray("keys")) {
            keys.add(temporaryExposureKey(key.getAsJsonObject()));
        }
        JsonObject rssiCorrections =
                scenario.has("rssiCorrections") ? scenario.getAsJsonObject("rssiCorrections") : new JsonObject();
        JsonArray sightings = new JsonArray();
        for (JsonElement sighting : scenario.getAsJsonArray("sightings")) {
            sightings.add(storeSighting(sighting.getAsJsonObject().deepCopy(), keys, rssiCorrections));
        }

        ExposureConfiguration v1Configuration =
                exposureConfiguration(scenario.getAsJsonObject("exposureConfiguration"));
        TekMetadataRecord tekMetadata = tekMetadataRecord(scenario.getAsJsonObject("diagnosisKeysDataMapping"));
        trace(keys, v1Configuration, tekMetadata, now);

        List<ExposureWindowProto> windows = new ArrayList<>();
        JsonArray windowsJson = new JsonArray();
        JsonArray v1Json = new JsonArray();
        for (Map.Entry<String, ExposureResult> entry : ExposureResultStorage.results().entrySet()) {
            int keyIndex = keyIndex(keys, entry.getKey());
            ExposureResult result = entry.getValue();
            if (result.getTekMetadata().getReportType() == REVOKED) {
                continue;
            }
            v1Json.add(v1Result(keyIndex, result));
            for (ExposureWindowProto window : result.getExposureWindowsList()) {
                if (!returnedByTheDocumentedApi(window)) {
                    continue;
                }
                windows.add(window);
                windowsJson.add(windowJson(keyIndex, window));
            }
        }
        List<DailySummary> summaries =
                DailySummaryUtils.getDailySummaries(
                        dailySummariesConfig(scenario.getAsJsonObject("dailySummariesConfig")), windows);
        summaries.sort(Comparator.comparingInt(DailySummary::getDaysSinceEpoch));
        JsonArray summariesJson = new JsonArray();
        for (DailySummary summary : summaries) {
            summariesJson.add(dailySummaryJson(summary));
        }

        JsonObject expected = new JsonObject();
        expected.add("exposureWindows", windowsJson);
        expected.add("dailySummaries", summariesJson);
        expected.add("v1ExposureResults", v1Json);
        JsonObject out = scenario.deepCopy();
        out.add("sightings", sightings);
        out.add("expected", expected);
        return out;
    }

    private static final ExposureKeyExportProto.TemporaryExposureKey.ReportType REVOKED =
            ExposureKeyExportProto.TemporaryExposureKey.ReportType.REVOKED;

    /**
     * Google's API documentation, where the reference code keeps more: exposures with infectiousness
     * NONE are dropped (DiagnosisKeysDataMapping.getDaysSinceOnsetToInfectiousness), and a REVOKED
     * key's matches are not returned (the tracer stores them for report-type transitions only):
     * neither its windows nor, above, its v1 result.
     */
    private static boolean returnedByTheDocumentedApi(ExposureWindowProto window) {
        return window.getTekMetadata().getInfectiousness()
                        != ExposureNotificationEnums.Infectiousness.INFECTIOUSNESS_NONE
                && window.getTekMetadata().getReportType() != REVOKED;
    }

    /** Runs Google's traceWithJava with the scenario's data mapping and "now" put into the tracer. */
    private static void trace(
            List<TemporaryExposureKey> keys,
            ExposureConfiguration configuration,
            TekMetadataRecord tekMetadata,
            long now)
            throws Exception {
        Clock clock = new FixedClock(TimeUnit.SECONDS.toMillis(now));
        ExposureMatchingTracer tracer =
                new ExposureMatchingTracer(new android.content.Context(), new MatchingRequest(keys, configuration), clock);
        // The tracer takes its data mapping from a per-app store that is always empty in Google's
        // reference code; the scenario's goes in its place.
        setField(tracer, "tekMetadataRecord", tekMetadata);
        setField(
                tracer,
                "keyExposureEvaluator",
                new KeyExposureEvaluator(
                        configuration,
                        RiskScoreCalculator.create(clock),
                        TracingParams.builder().build(),
                        "harness",
                        tekMetadata));
        // ContactTracingFeature.matchingWithNative() is true in Google's flags; the Java path is the
        // same matching without the JNI pre-filter.
        Method traceWithJava = ExposureMatchingTracer.class.getDeclaredMethod("traceWithJava", Iterable.class);
        traceWithJava.setAccessible(true);
        try {
            traceWithJava.invoke(tracer, tracer.getMatchingRequest().diagnosisKeys());
        } catch (InvocationTargetException e) {
            throw (Exception) e.getCause();
        }
    }

    private static void setField(Object target, String name, Object value) throws ReflectiveOperationException {
        Field field = target.getClass().getDeclaredField(name);
        field.setAccessible(true);
        field.set(target, value);
    }

    private static TemporaryExposureKey temporaryExposureKey(JsonObject key) {
        TemporaryExposureKey.TemporaryExposureKeyBuilder builder =
                new TemporaryExposureKey.TemporaryExposureKeyBuilder()
                        .setKeyData(Hex.stringToBytes(key.get("tek").getAsString()))
                        .setRollingStartIntervalNumber(key.get("rollingStartIntervalNumber").getAsInt())
                        .setRollingPeriod(key.get("rollingPeriod").getAsInt())
                        .setTransmissionRiskLevel(key.get("transmissionRiskLevel").getAsInt())
                        .setReportType(key.get("reportType").getAsInt());
        if (!key.has("daysSinceOnsetOfSymptoms")) {
            return builder.build();
        }
        int daysSinceOnset = key.get("daysSinceOnsetOfSymptoms").getAsInt();
        if (Math.abs(daysSinceOnset) <= DiagnosisKeysDataMapping.MAXIMUM_OFFSET_OF_DAYS_SINCE_ONSET) {
            return builder.setDaysSinceOnsetOfSymptoms(daysSinceOnset).build();
        }
        // A key file may carry any sint32 here (export.proto); the builder's range check is for keys
        // an app hands in. Past it, the value reaches ExposureWindowUtils.getInfectiousness as read.
        TemporaryExposureKey built = builder.build();
        try {
            setField(built, "daysSinceOnsetOfSymptoms", daysSinceOnset);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("TemporaryExposureKey.daysSinceOnsetOfSymptoms", e);
        }
        return built;
    }

    /**
     * Derives the sighting's RPI and AEM with Google's generators (the RPI its key broadcasts in
     * "interval", the metadata: version 1.1 with the calibration confidence in bits 3:2 (Google
     * reads them whatever the version; before 1.1 the specification has them reserved), and the
     * TX power), stores it as Google's SightingRecord, and returns the sighting with "rpi" and
     * "aem" added. The stored RSSI is calibrated, as BleScannerImpl.BleSightingCallback
     * .getAdjustedRssi stores it: the RSSI plus the correction of the adapter that heard it
     * ("rssiCorrections" by "adapterAddress"; none: 0), Google's one rssiOffset per device becoming
     * one per adapter.
     */
    private static JsonObject storeSighting(
            JsonObject sighting, List<TemporaryExposureKey> keys, JsonObject rssiCorrections) throws Exception {
        TemporaryExposureKey key = keys.get(sighting.get("key").getAsInt());
        int interval = sighting.get("interval").getAsInt();
        RollingProximityId rpi = null;
        for (GeneratedRollingProximityId generated : rollingProximityIds(key)) {
            if (generated.intervalNumber() == interval) {
                rpi = generated.rollingProximityId();
            }
        }
        if (rpi == null) {
            throw new IllegalArgumentException("interval " + interval + " is outside its key's 144 intervals");
        }
        byte version =
                (byte)
                        (BluetoothMetadata.VERSION_1_1
                                | (sighting.get("calibrationConfidence").getAsInt()
                                        << BluetoothMetadata.CALIBRATION_CONFIDENCE_BITS_OFFSET));
        BluetoothMetadata metadata = BluetoothMetadata.create(version, sighting.get("txPower").getAsByte());
        byte[] aem =
                new AssociatedEncryptedMetadataGenerator.Factory().getInstance(key).encrypt(rpi, metadata).getDirect();
        SightingRecord.Builder record =
                SightingRecord.newBuilder()
                        .setEpochSeconds(sighting.get("time").getAsInt())
                        .setRssi(calibratedRssi(sighting, rssiCorrections))
                        .setAssociatedEncryptedMetadata(ByteString.copyFrom(aem));
        if (sighting.has("previousScanTime")) {
            record.setPreviousScanEpochSeconds(sighting.get("previousScanTime").getAsInt());
        }
        ContactRecordDataStore.add(rpi, record.build());
        sighting.addProperty("rpi", Hex.bytesToStringLowercase(rpi.getDirect()));
        sighting.addProperty("aem", Hex.bytesToStringLowercase(aem));
        return sighting;
    }

    /**
     * BleScannerImpl.BleSightingCallback.getAdjustedRssi's sum; the scenarios stay clear of its
     * clamp to -127...126.
     */
    private static int calibratedRssi(JsonObject sighting, JsonObject rssiCorrections) {
        int correction = 0;
        if (sighting.has("adapterAddress")) {
            JsonElement adapterCorrection = rssiCorrections.get(sighting.get("adapterAddress").getAsString());
            correction = adapterCorrection == null ? 0 : adapterCorrection.getAsInt();
        }
        int calibrated = sighting.get("rssi").getAsInt() + correction;
        if (calibrated < -127 || calibrated > 126) {
            throw new IllegalArgumentException("a calibrated RSSI of " + calibrated + " dBm would be clamped");
        }
        return calibrated;
    }

    private static List<GeneratedRollingProximityId> rollingProximityIds(TemporaryExposureKey key) throws Exception {
        int start = key.getRollingStartIntervalNumber();
        int count = ContactTracingFeature.tkRollingPeriodMultipleOfIdRollingPeriod();
        return new RollingProximityIdGenerator.Factory()
                .getInstance(
                        AesEcbEncryptor.create(),
                        key.getKeyData(),
                        start,
                        start + count,
                        ContactTracingFeature.rollingProximityIdKeySizeBytes(),
                        ContactTracingFeature.rpikHkdfInfoString(),
                        ContactTracingFeature.rpidAesPaddedString())
                .generateIds(new byte[count * ContactTracingFeature.contactIdLength()]);
    }

    private static ExposureConfiguration exposureConfiguration(JsonObject json) {
        return new ExposureConfiguration.ExposureConfigurationBuilder()
                .setMinimumRiskScore(json.get("minimumRiskScore").getAsInt())
                .setAttenuationScores(ints(json, "attenuationScores"))
                .setDaysSinceLastExposureScores(ints(json, "daysSinceLastExposureScores"))
                .setDurationScores(ints(json, "durationScores"))
                .setTransmissionRiskScores(ints(json, "transmissionRiskScores"))
                .setDurationAtAttenuationThresholds(ints(json, "durationAtAttenuationThresholds"))
                .build();
    }

    /**
     * Google's DiagnosisKeysDataMapping builder fills the days a partial map leaves out with NONE;
     * the tracer reads the same as a TekMetadataRecord (the conversion is in Play services, not in
     * the reference code: the values are copied one for one).
     */
    private static TekMetadataRecord tekMetadataRecord(JsonObject json) {
        Map<Integer, Integer> days = new HashMap<>();
        for (Map.Entry<String, JsonElement> day : json.getAsJsonObject("daysSinceOnsetToInfectiousness").entrySet()) {
            days.put(Integer.parseInt(day.getKey()), day.getValue().getAsInt());
        }
        DiagnosisKeysDataMapping mapping =
                new DiagnosisKeysDataMapping.DiagnosisKeysDataMappingBuilder()
                        .setDaysSinceOnsetToInfectiousness(days)
                        .setReportTypeWhenMissing(json.get("reportTypeWhenMissing").getAsInt())
                        .setInfectiousnessWhenDaysSinceOnsetMissing(
                                json.get("infectiousnessWhenDaysSinceOnsetMissing").getAsInt())
                        .build();
        TekMetadataRecord.Builder record = TekMetadataRecord.newBuilder();
        Map<Integer, Integer> infectiousnessByDay = mapping.getDaysSinceOnsetToInfectiousness();
        for (int day = -DiagnosisKeysDataMapping.MAXIMUM_OFFSET_OF_DAYS_SINCE_ONSET;
                day <= DiagnosisKeysDataMapping.MAXIMUM_OFFSET_OF_DAYS_SINCE_ONSET;
                day++) {
            record.addDaysSinceOnsetToInfectiousness(
                    ExposureNotificationEnums.Infectiousness.forNumber(infectiousnessByDay.get(day)));
        }
        return record.setReportTypeWhenMissing(
                        ExposureKeyExportProto.TemporaryExposureKey.ReportType.forNumber(mapping.getReportTypeWhenMissing()))
                .setInfectiousnessWhenDaysSinceOnsetMissing(
                        ExposureNotificationEnums.Infectiousness.forNumber(
                                mapping.getInfectiousnessWhenDaysSinceOnsetMissing()))
                .build();
    }

    private static DailySummariesConfig dailySummariesConfig(JsonObject json) {
        List<Integer> thresholds = new ArrayList<>();
        for (int threshold : ints(json, "attenuationBucketThresholdDb")) {
            thresholds.add(threshold);
        }
        List<Double> weights = new ArrayList<>();
        for (JsonElement weight : json.getAsJsonArray("attenuationBucketWeights")) {
            weights.add(weight.getAsDouble());
        }
        DailySummariesConfig.DailySummariesConfigBuilder builder =
                new DailySummariesConfig.DailySummariesConfigBuilder()
                        .setAttenuationBuckets(thresholds, weights)
                        .setDaysSinceExposureThreshold(json.get("daysSinceExposureThreshold").getAsInt())
                        .setMinimumWindowScore(json.get("minimumWindowScore").getAsDouble());
        for (Map.Entry<String, JsonElement> weight : json.getAsJsonObject("reportTypeWeights").entrySet()) {
            builder.setReportTypeWeight(Integer.parseInt(weight.getKey()), weight.getValue().getAsDouble());
        }
        for (Map.Entry<String, JsonElement> weight : json.getAsJsonObject("infectiousnessWeights").entrySet()) {
            builder.setInfectiousnessWeight(Integer.parseInt(weight.getKey()), weight.getValue().getAsDouble());
        }
        return builder.build();
    }

    private static int[] ints(JsonObject json, String name) {
        JsonArray array = json.getAsJsonArray(name);
        int[] values = new int[array.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = array.get(i).getAsInt();
        }
        return values;
    }

    private static int keyIndex(List<TemporaryExposureKey> keys, String keyData) {
        for (int i = 0; i < keys.size(); i++) {
            if (Hex.bytesToStringLowercase(keys.get(i).getKeyData()).equals(keyData)) {
                return i;
            }
        }
        throw new IllegalStateException("a result for a key not in the scenario: " + keyData);
    }

    private static JsonObject windowJson(int keyIndex, ExposureWindowProto window) {
        JsonObject json = new JsonObject();
        json.addProperty("key", keyIndex);
        json.addProperty("epochSeconds", window.getEpochSeconds());
        json.addProperty("daysSinceEpoch", TimeUnit.SECONDS.toDays(window.getEpochSeconds()));
        json.addProperty("reportType", window.getTekMetadata().getReportType().getNumber());
        json.addProperty("infectiousness", window.getTekMetadata().getInfectiousness().getNumber());
        json.addProperty("calibrationConfidence", window.getTekMetadata().getCalibrationConfidence().getNumber());
        JsonArray scans = new JsonArray();
        for (ScanInstanceProto scan : window.getScanInstancesList()) {
            JsonObject scanJson = new JsonObject();
            scanJson.addProperty("minAttenuation", ExposureWindowUtils.getMinAttenuation(scan));
            scanJson.addProperty("typicalAttenuation", ExposureWindowUtils.getTypicalAttenuation(scan));
            scanJson.addProperty("secondsSinceLastScan", scan.getSecondsSinceLastScan());
            scanJson.add("attenuations", GSON.toJsonTree(scan.getAttenuationsList()));
            scans.add(scanJson);
        }
        json.add("scanInstances", scans);
        return json;
    }

    private static JsonObject dailySummaryJson(DailySummary summary) {
        JsonObject json = new JsonObject();
        json.addProperty("daysSinceEpoch", summary.getDaysSinceEpoch());
        json.add("summaryData", summaryDataJson(summary.getSummaryData()));
        JsonObject byReportType = new JsonObject();
        for (ExposureKeyExportProto.TemporaryExposureKey.ReportType reportType :
                ExposureKeyExportProto.TemporaryExposureKey.ReportType.values()) {
            DailySummary.ExposureSummaryData data = summary.getSummaryDataForReportType(reportType.getNumber());
            if (data.getWeightedDurationSum() > 0 || data.getScoreSum() > 0) {
                byReportType.add(String.valueOf(reportType.getNumber()), summaryDataJson(data));
            }
        }
        json.add("reportSummaries", byReportType);
        return json;
    }

    private static JsonObject summaryDataJson(DailySummary.ExposureSummaryData data) {
        JsonObject json = new JsonObject();
        json.addProperty("maximumScore", data.getMaximumScore());
        json.addProperty("scoreSum", data.getScoreSum());
        json.addProperty("weightedDurationSum", data.getWeightedDurationSum());
        return json;
    }

    private static JsonObject v1Result(int keyIndex, ExposureResult result) {
        JsonObject json = new JsonObject();
        json.addProperty("key", keyIndex);
        json.addProperty("dateMillisSinceEpoch", result.getDateMillisSinceEpoch());
        json.addProperty("maxRiskScore", result.getMaxRiskScore());
        json.addProperty("totalRiskScore", result.getTotalRiskScore());
        json.add("attenuationDurations", GSON.toJsonTree(result.getAttenuationDurationsList()));
        json.addProperty("reportType", result.getTekMetadata().getReportType().getNumber());
        JsonArray records = new JsonArray();
        for (ExposureRecord record : result.getExposureRecordsList()) {
            JsonObject recordJson = new JsonObject();
            recordJson.addProperty("durationSeconds", record.getDurationSeconds());
            recordJson.addProperty("attenuationValue", record.getAttenuationValue());
            recordJson.add("attenuationDurations", GSON.toJsonTree(record.getAttenuationDurationsList()));
            recordJson.addProperty("transmissionRiskLevel", record.getTransmissionRiskLevel());
            recordJson.addProperty("riskScore", record.getRiskScore());
            records.add(recordJson);
        }
        json.add("exposureRecords", records);
        return json;
    }

    /** The scenario's "now" for RiskScoreCalculator's days since exposure. */
    private static final class FixedClock implements Clock {
        private final long millis;

        FixedClock(long millis) {
            this.millis = millis;
        }

        @Override
        public long currentTimeMillis() {
            return millis;
        }

        @Override
        public long elapsedRealtime() {
            return millis;
        }

        @Override
        public long nanoTime() {
            return TimeUnit.MILLISECONDS.toNanos(millis);
        }
    }

    private Main() {}
}
