"""Private sampling: one eps-local-DP sample of a user's distribution (paper 003).

A user holds a distribution ``mu`` over ``k`` public points and releases one sample of
``M[mu]``, a distribution over ``k_v`` public output points that lies in the LDP
polytope ``Q_{m, eps}`` (Def. 2.2), which makes the sample eps-LDP (Prop. 3.2).
"""
