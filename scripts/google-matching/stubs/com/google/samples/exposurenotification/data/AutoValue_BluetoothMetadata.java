package com.google.samples.exposurenotification.data;

/** What AutoValue would generate for Google's BluetoothMetadata: its two values. */
final class AutoValue_BluetoothMetadata extends BluetoothMetadata {
    private final byte version;
    private final byte txPower;

    AutoValue_BluetoothMetadata(byte version, byte txPower) {
        this.version = version;
        this.txPower = txPower;
    }

    @Override public byte version() { return version; }
    @Override public byte txPower() { return txPower; }
}
