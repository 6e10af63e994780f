package androidx.annotation;

public @interface IntDef {
    int[] value() default {};
}
