package android.content;

/** Stand-in for Android's Context: Google's matching code only passes it along. */
public class Context {}
