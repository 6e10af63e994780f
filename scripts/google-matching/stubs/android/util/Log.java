package android.util;

/** Stand-in for Android's Log: the generator's output must be its JSON alone, so logs are dropped. */
public final class Log {
    public static int v(String tag, String message, Throwable error) { return 0; }
    public static int d(String tag, String message, Throwable error) { return 0; }
    public static int i(String tag, String message, Throwable error) { return 0; }
    public static int w(String tag, String message, Throwable error) { return 0; }
    public static int e(String tag, String message, Throwable error) { return 0; }

    private Log() {}
}
