// sobel: 3x3 edge magnitude of an 8-bit image, bit-exact with funcs/ref/sobel_ref (min(255,
// |Gx| + |Gy|); the first and last column and the image's first and last row are 0). A job computes
// `rows` output rows; its input has one halo row above (above = 1) and below (below = 1) where the
// image has them (funcs/kernels.hpp), so output row r is input row r + above, and an input row with
// no neighbour above or below is an image border. One work-item per output pixel; the NDRange is
// rounded up to whole work-groups of TANDEM_WG pixels along a row.
__kernel __attribute__((reqd_work_group_size(TANDEM_WG, 1, 1)))
void tandem_sobel(__global const uchar* in, __global uchar* out, uint width, uint rows, uint above,
                  uint below) {
  const uint c = (uint)get_global_id(0), r = (uint)get_global_id(1);
  if (c >= width || r >= rows) return;
  const uint in_rows = rows + above + below;
  const uint ir = r + above;
  uchar v = 0;
  if (c > 0 && c + 1 < width && ir > 0 && ir + 1 < in_rows) {
    __global const uchar* up = in + (size_t)(ir - 1) * width + c;
    __global const uchar* mid = up + width;
    __global const uchar* down = mid + width;
    const int gx = (up[1] + 2 * mid[1] + down[1]) - (up[-1] + 2 * mid[-1] + down[-1]);
    const int gy = (down[-1] + 2 * down[0] + down[1]) - (up[-1] + 2 * up[0] + up[1]);
    v = (uchar)min(255u, abs(gx) + abs(gy));  // abs() of an int is a uint in OpenCL C
  }
  out[(size_t)r * width + c] = v;
}
