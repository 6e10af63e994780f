package android.bluetooth.le;

/** Stand-in for Android's ScanSettings: the scan mode constant Google's flags name. */
public final class ScanSettings {
    public static final int SCAN_MODE_LOW_LATENCY = 2;

    private ScanSettings() {}
}
