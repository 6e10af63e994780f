package androidx.annotation;

public @interface VisibleForTesting {}
