package android.os;

/** Stand-in for Android's SystemClock, on the JVM's clocks. */
public final class SystemClock {
    public static long elapsedRealtime() {
        return System.nanoTime() / 1_000_000;
    }

    public static long currentThreadTimeMillis() {
        return System.nanoTime() / 1_000_000;
    }

    private SystemClock() {}
}
