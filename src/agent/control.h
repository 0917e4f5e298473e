/* control.h — the agent's own thread: control socket (hotspur ctl),
 * periodic profiles and wall-clock ticks. */
#ifndef HS_AGENT_CONTROL_H
#define HS_AGENT_CONTROL_H

/* Start the thread if anything needs it (control socket, periodic profiles,
 * wall-clock sampling). 0, or -1 with errno. */
int hs_control_start(void);
/* At exit: stop answering and remove the socket. */
void hs_control_stop(void);
/* In every fork child, first: drop the parent's socket and wake pipe (a
 * fatal signal then takes its default course unless the child profiles). */
void hs_control_forget_parent(void);
/* In a fork child that profiles: a thread and socket of its own. */
void hs_control_after_fork(void);
/* The process ends without exit() (_exit): have the agent thread write
 * every profile and wait for it. 0 done, -1 not done (no agent thread, or
 * a fatal signal is being handled): the caller may write itself. */
int hs_control_write_before_exit(void);
/* Periodic mode: whether a profile's window is open now. */
int hs_control_window_open(void);
/* Close the window: whether it was open (the caller has it then). */
int hs_control_window_close(void);

#endif
