package com.google.auto.value;

/** The annotation alone: Debian has no AutoValue processor, so the AutoValue_ classes are written by hand beside it. */
public @interface AutoValue {
    @interface Builder {}
}
