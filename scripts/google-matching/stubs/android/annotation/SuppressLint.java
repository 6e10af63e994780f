package android.annotation;

public @interface SuppressLint {
    String[] value();
}
