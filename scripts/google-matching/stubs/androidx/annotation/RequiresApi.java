package androidx.annotation;

public @interface RequiresApi {
    int api() default 1;
}
