package android.os;

/** Stand-in for Android's Build.VERSION_CODES, named in Google's @RequiresApi and @TargetApi. */
public final class Build {
    public static final class VERSION_CODES {
        public static final int KITKAT = 19;

        private VERSION_CODES() {}
    }

    private Build() {}
}
