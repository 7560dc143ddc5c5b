// Tail probabilities of the reference distributions, through Boost.Math (accurate far into the
// tails, where 1 - cdf would cancel).
#pragma once

namespace lmkit::stats {

// P(Z > z) for Z ~ N(0, 1).
double normal_sf(double z);
// P(T > t) for T ~ Student's t with `df` degrees of freedom (df > 0, need not be an integer).
double student_t_sf(double t, double df);
// Two-sided p-value of a t statistic: 2 P(T > |t|).
double student_t_two_sided(double t, double df);

}  // namespace lmkit::stats
