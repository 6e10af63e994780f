package android.os;

import java.util.UUID;

/** Stand-in for Android's ParcelUuid (a UUID). */
public final class ParcelUuid {
    private final UUID uuid;

    public ParcelUuid(UUID uuid) {
        this.uuid = uuid;
    }

    public UUID getUuid() {
        return uuid;
    }
}
