package android.os;

/** Stand-in for Android's Parcel: Google's value classes can be parcelled; matching never does it. */
public final class Parcel {
    public int readInt() { throw new UnsupportedOperationException("Parcel"); }
    public void readByteArray(byte[] bytes) { throw new UnsupportedOperationException("Parcel"); }
    public void writeInt(int value) { throw new UnsupportedOperationException("Parcel"); }
    public void writeByteArray(byte[] bytes) { throw new UnsupportedOperationException("Parcel"); }
}
