//! Warp-level matrix instructions (mma.sync, ldmatrix, wmma): not written yet.
